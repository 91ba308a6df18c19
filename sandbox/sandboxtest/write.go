package sandboxtest

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbox/agentbox/sandbox"
)

// testWriteCanceled: a write whose ctx has ended writes nothing and
// returns an error that is ErrCanceled and also the ctx's own error, so
// that callers can tell a cancelled call from a deadline with errors.Is.
func testWriteCanceled(t *testing.T, r sandbox.Runner, ws string) {
	canceled, cancel := context.WithCancel(ctx(t))
	cancel()
	expired, cancel2 := context.WithDeadline(ctx(t), time.Now().Add(-time.Second))
	defer cancel2()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"canceled", canceled, context.Canceled},
		{"deadline", expired, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(ws, "wc-"+tc.name+".txt")
			err := r.WriteFile(tc.ctx, sandbox.FileWrite{Path: path, Content: []byte("x"), Mode: 0o644})
			if !errors.Is(err, sandbox.ErrCanceled) || !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want ErrCanceled wrapping %v", err, tc.want)
			}
			if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a cancelled write left %s (%v)", path, err)
			}
		})
	}
}

// testWriteFile: Runner.WriteFile writes beneath the workspace only,
// atomically, never through a symlink, keeping an existing file's mode,
// streaming content larger than a frame, and refuses protected paths it
// was not told are approved.
func testWriteFile(t *testing.T, r sandbox.Runner, ws string) {
	// Made by the sandbox, so that the workspace owner owns it.
	mustRun(t, r, sandbox.Spec{Shell: `mkdir -p wf/dir && printf old > wf/exec.sh && chmod 750 wf/exec.sh &&
ln -s /etc wf/out && ln -s dir wf/in && ln -s /etc/hostname wf/leak && printf keep > wf/keep`})
	big := bytes.Repeat([]byte("agentbox"), 20_000_000/8)
	abs := func(rel string) string { return filepath.Join(ws, filepath.FromSlash(rel)) }
	tests := []struct {
		name     string
		path     string
		mode     fs.FileMode
		content  []byte
		wantErr  error
		errPath  string // workspace-relative path a *WriteError names
		wantMode fs.FileMode
	}{
		{name: "new file", path: abs("wf/new.txt"), mode: 0o640, content: []byte("hello\n"), wantMode: 0o640},
		{name: "existing keeps its mode", path: abs("wf/exec.sh"), mode: 0o644, content: []byte("new\n"), wantMode: 0o750},
		{name: "parents created", path: abs("wf/a/b/c.txt"), mode: 0o644, content: []byte("deep"), wantMode: 0o644},
		{name: "empty", path: abs("wf/dir/empty"), mode: 0o600, content: []byte{}, wantMode: 0o600},
		{name: "20 MB", path: abs("wf/big.bin"), mode: 0o644, content: big, wantMode: 0o644},
		{name: "symlinked parent out", path: abs("wf/out/agentbox-pwned"), content: []byte("x"), wantErr: sandbox.ErrSymlink, errPath: "wf/out"},
		{name: "symlinked parent in", path: abs("wf/in/x"), content: []byte("x"), wantErr: sandbox.ErrSymlink, errPath: "wf/in"},
		{name: "final symlink", path: abs("wf/leak"), content: []byte("x"), wantErr: sandbox.ErrSymlink, errPath: "wf/leak"},
		{name: "protected", path: abs("wf/.git/hooks/pre-commit"), content: []byte("x"), wantErr: sandbox.ErrProtected, errPath: "wf/.git/hooks/pre-commit"},
		{name: "workspace itself", path: ws, content: []byte("x"), wantErr: sandbox.ErrInvalidSpec},
		{name: "outside", path: "/etc/agentbox-pwned", content: []byte("x"), wantErr: sandbox.ErrInvalidSpec},
		{name: "relative", path: "wf/x", content: []byte("x"), wantErr: sandbox.ErrInvalidSpec},
		{name: "unclean", path: ws + "/wf/../x", content: []byte("x"), wantErr: sandbox.ErrInvalidSpec},
		{name: "mode with type bits", path: abs("wf/x"), mode: fs.ModeDir | 0o755, content: []byte("x"), wantErr: sandbox.ErrInvalidSpec},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := r.WriteFile(ctx(t), sandbox.FileWrite{Path: tc.path, Content: tc.content, Mode: tc.mode})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				var we *sandbox.WriteError
				if tc.errPath != "" && (!errors.As(err, &we) || we.Path != tc.errPath) {
					t.Fatalf("err %v does not name %s", err, tc.errPath)
				}
				if _, err := os.Stat(abs("wf/.git")); err == nil {
					t.Fatal("a refused protected write created .git")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(tc.path)
			if err != nil || !bytes.Equal(got, tc.content) {
				t.Fatalf("read back %d bytes (%v), want %d", len(got), err, len(tc.content))
			}
			fi, _ := os.Stat(tc.path)
			if fi.Mode() != tc.wantMode {
				t.Fatalf("mode %v, want %v", fi.Mode(), tc.wantMode)
			}
		})
	}
	if fi, err := os.Lstat(abs("wf/leak")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Error("the final symlink was replaced")
	}
	res := mustRun(t, r, sandbox.Spec{Shell: "ls -a wf wf/dir wf/a/b | grep -c agentbox-write || true"})
	if strings.TrimSpace(string(res.Stdout)) != "0" {
		t.Errorf("temporary files left: %s", res.Stdout)
	}
	// Approval lets the runner's check through; the write then happens.
	hook := abs("wf/.git/hooks/pre-commit")
	if err := r.WriteFile(ctx(t), sandbox.FileWrite{Path: hook, Content: []byte("#!/bin/sh\n"), Mode: 0o755, ApprovedProtected: true}); err != nil {
		t.Fatalf("approved protected write: %v", err)
	}
}

// testLargeStdin: stdin larger than any frame reaches the command whole.
func testLargeStdin(t *testing.T, r sandbox.Runner, ws string) {
	in := bytes.Repeat([]byte("0123456789\n"), 2_000_000) // 22 MB
	res := mustRun(t, r, sandbox.Spec{Argv: []string{"wc", "-c"}, Stdin: in})
	if got := strings.TrimSpace(string(res.Stdout)); got != strconv.Itoa(len(in)) {
		t.Fatalf("wc -c = %q, want %d", got, len(in))
	}
	// A command that reads only the start of it still ends normally.
	res = mustRun(t, r, sandbox.Spec{Argv: []string{"head", "-c", "5"}, Stdin: in})
	if string(res.Stdout) != "01234" || res.ExitCode != 0 {
		t.Fatalf("head: %q exit %d", res.Stdout, res.ExitCode)
	}
}

// testWriteGated: a write behind a gate (FileWrite.Gate: the snapshot's
// pending record reaching the disk) is not visible while the gate is
// closed, neither the file nor a directory it needs; a gate that fails
// withdraws it and leaves the workspace as it was (no file, no directory,
// no temporary file); one that needs a new directory is written once the
// gate opened.
func testWriteGated(t *testing.T, r sandbox.Runner, ws string) {
	mustRun(t, r, sandbox.Spec{Shell: `mkdir -p wg/d && printf 'old\n' > wg/d/old`})
	listing := func() []string {
		var out []string
		filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
			if err == nil {
				out = append(out, strings.TrimPrefix(p, ws))
			}
			return nil
		})
		return out
	}
	withdraw := errors.New("the record could not reach the disk")
	for _, tc := range []struct {
		name, rel string
		gateErr   error
	}{
		{"new file", "wg/d/new", nil},
		{"existing file", "wg/d/old", nil},
		{"new directory", "wg/e/f/new", nil},
		{"withdrawn new file", "wg/d/withdrawn", withdraw},
		{"withdrawn existing file", "wg/d/old", withdraw},
		{"withdrawn new directory", "wg/g/h/new", withdraw},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := listing()
			old, _ := os.ReadFile(filepath.Join(ws, tc.rel))
			content := []byte("content of " + tc.name + "\n")
			var calls atomic.Int32
			gate := func() error {
				calls.Add(1)
				if got, _ := os.ReadFile(filepath.Join(ws, tc.rel)); !bytes.Equal(got, old) {
					t.Errorf("%s holds %q before the gate opened", tc.rel, got)
				}
				if !strings.HasPrefix(tc.rel, "wg/d/") {
					if _, err := os.Lstat(filepath.Join(ws, "wg", strings.Split(tc.rel, "/")[1])); err == nil {
						t.Errorf("a directory of %s was created before the gate opened", tc.rel)
					}
				}
				return tc.gateErr
			}
			err := r.WriteFile(ctx(t), sandbox.FileWrite{Path: filepath.Join(ws, tc.rel), Content: content, Mode: 0o644, Gate: gate})
			if calls.Load() < 1 {
				t.Fatal("the gate was not asked")
			}
			if tc.gateErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				if got, _ := os.ReadFile(filepath.Join(ws, tc.rel)); !bytes.Equal(got, content) {
					t.Fatalf("%s holds %q", tc.rel, got)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "withdrawn") {
				t.Fatalf("err %v, want the write withdrawn", err)
			}
			if after := listing(); !slices.Equal(after, before) {
				t.Fatalf("a withdrawn write changed the workspace: %q, was %q", after, before)
			}
			if got, _ := os.ReadFile(filepath.Join(ws, tc.rel)); !bytes.Equal(got, old) {
				t.Fatalf("%s holds %q after a withdrawn write", tc.rel, got)
			}
		})
	}
}
