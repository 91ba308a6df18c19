package initproc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// dataFrames is content as the executor sends it.
func dataFrames(t *testing.T, content []byte) *bytes.Buffer {
	t.Helper()
	var b bytes.Buffer
	if err := WriteData(&b, content); err != nil {
		t.Fatal(err)
	}
	return &b
}

// writeTree is a workspace with a file, a directory, links out of and
// into it, next to an outside directory.
type writeTree struct {
	ws, outside string
}

func newWriteTree(t *testing.T) writeTree {
	t.Helper()
	base := t.TempDir()
	tr := writeTree{ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	must(t, os.MkdirAll(filepath.Join(tr.ws, "dir"), 0o755))
	must(t, os.MkdirAll(tr.outside, 0o755))
	must(t, os.WriteFile(filepath.Join(tr.outside, "secret"), []byte("outside\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(tr.ws, "exec.sh"), []byte("old\n"), 0o750))
	must(t, os.WriteFile(filepath.Join(tr.ws, "file"), []byte("old\n"), 0o644))
	must(t, os.Symlink(tr.outside, filepath.Join(tr.ws, "out")))                           // parent link, out of the workspace
	must(t, os.Symlink("dir", filepath.Join(tr.ws, "in")))                                 // parent link, inside
	must(t, os.Symlink(filepath.Join(tr.outside, "secret"), filepath.Join(tr.ws, "leak"))) // final link, out
	must(t, os.Symlink("/proc/self/root/etc", filepath.Join(tr.ws, "magic")))
	must(t, os.Symlink("..", filepath.Join(tr.ws, "dir", "up")))
	must(t, os.Link(filepath.Join(tr.outside, "secret"), filepath.Join(tr.ws, "hard")))
	return tr
}

func TestWrite(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 20_000_000/16) // 20 MB, 20 frames
	tests := []writeCase{
		{name: "new file gets the given mode", rel: "new.txt", mode: 0o640, content: []byte("hi\n"), wantMod: 0o640},
		{name: "existing file keeps its mode", rel: "exec.sh", mode: 0o644, content: []byte("new\n"), wantMod: 0o750},
		{name: "missing parents are created", rel: "a/b/c/new.txt", mode: 0o644, content: []byte("deep\n"), wantMod: 0o644},
		{name: "empty content", rel: "dir/empty", mode: 0o600, content: []byte{}, wantMod: 0o600},
		{name: "big content in frames", rel: "dir/big.bin", mode: 0o644, content: big, wantMod: 0o644},
		{name: "hard link gets a new inode", rel: "hard", mode: 0o644, content: []byte("new\n"), wantMod: 0o644},
		{name: "setuid bit is not kept", rel: "file", mode: 0o4755, content: []byte("x"), wantMod: 0o644},

		{name: "dot-dot", rel: "../outside/secret", content: []byte("x"), errHas: "clean path"},
		{name: "inner dot-dot", rel: "dir/../file", content: []byte("x"), errHas: "clean path"},
		{name: "absolute", rel: "/etc/passwd", content: []byte("x"), errHas: "relative path"},
		{name: "empty path", rel: "", content: []byte("x"), errHas: "relative path"},
		{name: "double slash", rel: "dir//x", content: []byte("x"), errHas: "clean path"},
		{name: "symlinked parent out", rel: "out/secret", content: []byte("x"), errno: unix.ELOOP, errPath: "out"},
		{name: "symlinked parent in", rel: "in/x", content: []byte("x"), errno: unix.ELOOP, errPath: "in"},
		{name: "symlinked parent deeper", rel: "dir/up/file", content: []byte("x"), errno: unix.ELOOP, errPath: "dir/up"},
		{name: "magic link parent", rel: "magic/passwd", content: []byte("x"), errno: unix.ELOOP, errPath: "magic"},
		{name: "final symlink is not followed", rel: "leak", content: []byte("x"), errno: unix.ELOOP, errPath: "leak"},
		{name: "directory", rel: "dir", content: []byte("x"), errno: unix.EISDIR, errPath: "dir"},
		{name: "file as parent", rel: "file/x", content: []byte("x"), errno: unix.ENOTDIR, errPath: "file"},
		{name: "short content", rel: "file", content: []byte("x"), size: 5, errHas: "expected 5"},
		{name: "long content", rel: "file", content: []byte("xxxxxx"), size: 2, errHas: "expected 2"},
	}
	// Both resolvers: openat2 (the host) and openat one name at a time
	// (inside a container, where seccomp hides openat2).
	for _, fallback := range []bool{false, true} {
		resolver := map[bool]string{false: "openat2", true: "openat"}[fallback]
		for _, tc := range tests {
			t.Run(resolver+"/"+tc.name, func(t *testing.T) {
				noOpenat2.Store(fallback)
				defer noOpenat2.Store(false)
				testWriteCase(t, tc)
			})
		}
	}
}

// writeCase is one write and what it should do.
type writeCase struct {
	name    string
	rel     string
	mode    uint32
	content []byte
	size    int64 // 0: len(content)
	errno   unix.Errno
	errPath string // the path the error names
	errHas  string
	wantMod os.FileMode
}

func testWriteCase(t *testing.T, tc writeCase) {
	tr := newWriteTree(t)
	size := int64(len(tc.content))
	if tc.size != 0 {
		size = tc.size
	}
	req := WriteReq{Root: tr.ws, Rel: tc.rel, Mode: tc.mode, Size: size}
	werr := Write(req, &dataReader{r: dataFrames(t, tc.content)})
	if secret, _ := os.ReadFile(filepath.Join(tr.outside, "secret")); string(secret) != "outside\n" {
		t.Fatalf("wrote outside the workspace: %q", secret)
	}
	assertNoTemp(t, tr.ws)
	if tc.errno != 0 || tc.errHas != "" {
		if werr == nil {
			t.Fatal("write accepted")
		}
		if tc.errno != 0 && (!errors.Is(werr, tc.errno) || werr.Path != tc.errPath) {
			t.Fatalf("error %v (path %q), want %s on %q", werr, werr.Path, unix.ErrnoName(tc.errno), tc.errPath)
		}
		if !strings.Contains(werr.Error(), tc.errHas) {
			t.Fatalf("error %q, want it to say %q", werr, tc.errHas)
		}
		if b, _ := os.ReadFile(filepath.Join(tr.ws, "file")); string(b) != "old\n" {
			t.Fatalf("a refused write changed a file: %q", b)
		}
		if fi, err := os.Lstat(filepath.Join(tr.ws, "leak")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatal("the final symlink was replaced")
		}
		return
	}
	if werr != nil {
		t.Fatal(werr)
	}
	p := filepath.Join(tr.ws, filepath.FromSlash(tc.rel))
	got, err := os.ReadFile(p)
	if err != nil || !bytes.Equal(got, tc.content) {
		t.Fatalf("content %d bytes, want %d (%v)", len(got), len(tc.content), err)
	}
	fi, _ := os.Stat(p)
	if fi.Mode() != tc.wantMod {
		t.Fatalf("mode %v, want %v", fi.Mode(), tc.wantMod)
	}
}

// TestWriteStreamCut: an executor that dies mid-content leaves the file
// as it was.
func TestWriteStreamCut(t *testing.T) {
	tr := newWriteTree(t)
	frames := dataFrames(t, bytes.Repeat([]byte("y"), 3*DataChunk))
	cut := bytes.NewReader(frames.Bytes()[:DataChunk+100])
	werr := Write(WriteReq{Root: tr.ws, Rel: "file", Size: 3 * DataChunk}, &dataReader{r: cut})
	if werr == nil || werr.Op != "receive" {
		t.Fatalf("cut stream: %v", werr)
	}
	if b, _ := os.ReadFile(filepath.Join(tr.ws, "file")); string(b) != "old\n" {
		t.Fatalf("file changed: %q", b)
	}
	assertNoTemp(t, tr.ws)
}

// TestWriteFileSizeLimit: the fsize ulimit gives EFBIG (Go ignores
// SIGXFSZ), reported as such. It runs in a child process so that the
// limit does not hold for the test binary.
func TestWriteFileSizeLimit(t *testing.T) {
	if ws := os.Getenv("AGENTBOX_TEST_FSIZE_WS"); ws != "" {
		lim := unix.Rlimit{Cur: 1 << 20, Max: 1 << 20}
		if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &lim); err != nil {
			t.Fatal(err)
		}
		content := make([]byte, 2<<20)
		st := runWrite(WriteReq{Root: ws, Rel: "big", Size: int64(len(content)), Mode: 0o644}, bytes.NewReader(content), nil)
		json.NewEncoder(os.Stdout).Encode(st)
		return
	}
	ws := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWriteFileSizeLimit$")
	cmd.Env = append(os.Environ(), "AGENTBOX_TEST_FSIZE_WS="+ws)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v: %s", err, out)
	}
	if !bytes.Contains(out, []byte(`"errno":"EFBIG"`)) {
		t.Fatalf("child reported %s", out)
	}
	assertNoTemp(t, ws)
	if _, err := os.Stat(filepath.Join(ws, "big")); !os.IsNotExist(err) {
		t.Fatal("a partial file was left")
	}
}

func assertNoTemp(t *testing.T, ws string) {
	t.Helper()
	filepath.WalkDir(ws, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), tempPrefix) {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}

// TestMainWrite drives a write request through Main: no process is
// started, the content arrives in Data frames, the status names errors.
// Init then takes the next request in the same container (a write ran
// nothing of the agent's), even after a refused write whose content it
// did not read, and ends at the stream's end.
func TestMainWrite(t *testing.T) {
	tests := []struct {
		name    string
		rel     string
		content []byte
		want    string // in the exit status
	}{
		{"written", "sub/x.txt", []byte("hello\n"), `{"code":0`},
		{"symlinked parent", "out/x", []byte("x"), `"errno":"ELOOP","err_path":"out"`},
		{"big", "big", bytes.Repeat([]byte{'z'}, 5*DataChunk+7), `{"code":0`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newWriteTree(t)
			req, _ := json.Marshal(Req{Key: testKey, Workdir: tr.ws, Write: &WriteReq{Root: tr.ws, Rel: tc.rel, Mode: 0o644, Size: int64(len(tc.content))}})
			next, _ := json.Marshal(Req{Key: testKey, Workdir: tr.ws, Write: &WriteReq{Root: tr.ws, Rel: "next", Mode: 0o644, Size: 4}})
			var in bytes.Buffer
			WriteFrame(&in, Request, req)
			WriteData(&in, tc.content)
			WriteFrame(&in, Request, next)
			WriteData(&in, []byte("next"))
			var out, diag bytes.Buffer
			if code := Main(&in, &out, &diag, nil); code != 0 {
				t.Fatalf("Main = %d: %s", code, diag.String())
			}
			types, status := readFrames(&out)
			checkTwoWrites(t, types, status, tc.want, tr.ws)
			if tc.want == `{"code":0` {
				if got, _ := os.ReadFile(filepath.Join(tr.ws, tc.rel)); !bytes.Equal(got, tc.content) {
					t.Fatalf("content %d bytes", len(got))
				}
			}
		})
	}
}

// TestMainStdinStreams: a command's stdin arrives in Data frames, larger
// than a frame, and a command that stops reading early is no error.
func TestMainStdinStreams(t *testing.T) {
	tests := []struct {
		name  string
		argv  []string
		stdin []byte
		want  string
	}{
		{"all of it", []string{"/usr/bin/wc", "-c"}, bytes.Repeat([]byte("a"), 20<<20), "20971520"},
		{"empty", []string{"/usr/bin/wc", "-c"}, []byte{}, "0"},
		{"reads one line", []string{"/usr/bin/head", "-n1"}, append([]byte("first\n"), bytes.Repeat([]byte("b"), 3<<20)...), "first"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := json.Marshal(Req{Key: testKey, Argv: tc.argv, Workdir: "/tmp", Env: []string{"PATH=/usr/bin:/bin"}, Stdin: true})
			var in bytes.Buffer
			WriteFrame(&in, Request, req)
			WriteData(&in, tc.stdin)
			open, hold := io.Pipe()
			defer hold.Close()
			var out, diag bytes.Buffer
			if code := Main(io.MultiReader(&in, open), &out, &diag, nil); code != 0 {
				t.Fatalf("Main = %d: %s", code, diag.String())
			}
			var stdout, status []byte
			for {
				typ, p, err := ReadFrame(&out)
				if err != nil {
					break
				}
				switch typ {
				case Stdout:
					stdout = append(stdout, p...)
				case Exit:
					status = p
				}
			}
			if strings.TrimSpace(string(stdout)) != tc.want || !bytes.Contains(status, []byte(`"code":0`)) {
				t.Fatalf("stdout %q status %s", stdout, status)
			}
		})
	}
}

// TestMainCommandEndsService: after a command (the agent's process ran
// in the container) init takes no further request.
func TestMainCommandEndsService(t *testing.T) {
	tr := newWriteTree(t)
	cmd, _ := json.Marshal(Req{Key: testKey, Argv: []string{"true"}, Workdir: tr.ws, Env: []string{"PATH=/usr/bin:/bin"}})
	next, _ := json.Marshal(Req{Key: testKey, Workdir: tr.ws, Write: &WriteReq{Root: tr.ws, Rel: "after", Mode: 0o644, Size: 1}})
	var in bytes.Buffer
	WriteFrame(&in, Request, cmd)
	WriteFrame(&in, Request, next)
	WriteData(&in, []byte("x"))
	var out, diag bytes.Buffer
	if code := Main(&in, &out, &diag, nil); code != 0 {
		t.Fatalf("Main = %d: %s", code, diag.String())
	}
	var types []Type
	for {
		typ, p, err := ReadFrame(&out)
		if err != nil {
			break
		}
		types = append(types, typ)
		if typ == Exit && bytes.Contains(p, []byte("reusable")) {
			t.Errorf("a command's status says the container is reusable: %s", p)
		}
	}
	if string(types) != "RSX" {
		t.Fatalf("frames %q, want ready, started, exit and nothing more", types)
	}
	if _, err := os.Stat(filepath.Join(tr.ws, "after")); !os.IsNotExist(err) {
		t.Fatalf("a request after a command was served: %v", err)
	}
}

// TestWriteGated: a gated write makes nothing visible (neither the file
// nor a directory) before its gate passes; a failed gate leaves the
// workspace as it was, temporary file included; a missing parent ends it
// with nothing created, for the executor to send it again ungated.
func TestWriteGated(t *testing.T) {
	tests := []struct {
		name    string
		rel     string
		gateErr error
		wantOp  string // "" for success
		gated   bool   // the gate was called
	}{
		{"commit, new file", "dir/new.txt", nil, "", true},
		{"commit, existing file", "file", nil, "", true},
		{"withdrawn", "dir/new.txt", errors.New("record not durable"), "commit", true},
		{"withdrawn, existing file", "file", errors.New("record not durable"), "commit", true},
		{"missing parent", "a/b/c.txt", nil, "gate", true},
		{"missing parent, withdrawn", "a/b/c.txt", errors.New("record not durable"), "commit", true},
		{"refused before the gate", "out/x", nil, "open", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newWriteTree(t)
			before := listTree(t, tr.ws)
			content := []byte("new content\n")
			gated := false
			gate := func() error {
				gated = true
				// At the gate nothing of the write is visible yet but the
				// temporary file, whose content is complete.
				now := listTree(t, tr.ws)
				for p := range now {
					if _, ok := before[p]; !ok && !strings.Contains(p, tempPrefix) {
						t.Errorf("%s visible before the gate passed", p)
					}
				}
				if got, _ := os.ReadFile(filepath.Join(tr.ws, tc.rel)); tc.rel == "file" && string(got) != "old\n" {
					t.Errorf("the file holds %q before the gate passed", got)
				}
				return tc.gateErr
			}
			werr := WriteGated(WriteReq{Root: tr.ws, Rel: tc.rel, Mode: 0o644, Size: int64(len(content)), Gated: true}, bytes.NewReader(content), gate)
			if gated != tc.gated {
				t.Fatalf("gate called: %v, want %v", gated, tc.gated)
			}
			if tc.wantOp == "" {
				if werr != nil {
					t.Fatal(werr)
				}
				if got, _ := os.ReadFile(filepath.Join(tr.ws, tc.rel)); !bytes.Equal(got, content) {
					t.Fatalf("content %q", got)
				}
				return
			}
			if werr == nil || werr.Op != tc.wantOp {
				t.Fatalf("error %v, want op %q", werr, tc.wantOp)
			}
			after := listTree(t, tr.ws)
			if len(after) != len(before) {
				t.Fatalf("the workspace changed: %v, was %v", after, before)
			}
			for p, c := range before {
				if after[p] != c {
					t.Fatalf("%s changed", p)
				}
			}
		})
	}
}

// listTree maps each path beneath root (links not followed) to its
// content (files) or kind.
func listTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.Type().IsRegular():
			b, _ := os.ReadFile(p)
			out[rel] = string(b)
		default:
			out[rel] = d.Type().String()
		}
		return nil
	})
	return out
}

// TestMainWriteGated: through Main, a gated write reads its Commit frame
// after the content whatever happens to the write (done, withdrawn,
// refused, ungated), so that the stream stays in step and the container
// serves the next request; a frame other than Commit in its place ends
// the service.
func TestMainWriteGated(t *testing.T) {
	tests := []struct {
		name     string
		rel      string
		commit   []byte // the Commit payload; nil sends a Data frame instead
		noCommit bool
		want     string
		reusable bool
	}{
		{"committed", "dir/x.txt", []byte{}, false, `{"code":0`, true},
		{"withdrawn", "dir/x.txt", []byte("disk full"), false, `withdrawn: disk full`, true},
		{"refused", "out/x", []byte{}, false, `"errno":"ELOOP"`, true},
		{"ungated", "new/dir/x.txt", []byte{}, false, `"ungate":true`, true},
		{"no commit frame", "dir/x.txt", nil, true, ``, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newWriteTree(t)
			content := []byte("gated\n")
			req, _ := json.Marshal(Req{Key: testKey, Workdir: tr.ws, Write: &WriteReq{Root: tr.ws, Rel: tc.rel, Mode: 0o644, Size: int64(len(content)), Gated: true}})
			next, _ := json.Marshal(Req{Key: testKey, Workdir: tr.ws, Write: &WriteReq{Root: tr.ws, Rel: "next", Mode: 0o644, Size: 4}})
			var in bytes.Buffer
			WriteFrame(&in, Request, req)
			WriteData(&in, content)
			if tc.noCommit {
				WriteData(&in, []byte("x")) // a Data frame where Commit belongs
			} else {
				WriteFrame(&in, Commit, tc.commit)
			}
			WriteFrame(&in, Request, next)
			WriteData(&in, []byte("next"))
			var out, diag bytes.Buffer
			code := Main(&in, &out, &diag, nil)
			types, status := readFrames(&out)
			if !tc.reusable {
				if string(types) != "RSX" || bytes.Contains(status[0], []byte(`"reusable":true`)) {
					t.Fatalf("frames %q, status %s: want one write's, not reusable", types, status)
				}
				if _, err := os.Stat(filepath.Join(tr.ws, "next")); err == nil {
					t.Fatal("a container out of step served another request")
				}
				return
			}
			if code != 0 {
				t.Fatalf("Main = %d: %s", code, diag.String())
			}
			checkTwoWrites(t, types, status, tc.want, tr.ws)
			got, err := os.ReadFile(filepath.Join(tr.ws, tc.rel))
			if (tc.want == `{"code":0`) != (err == nil && bytes.Equal(got, content)) {
				t.Fatalf("file %q (%v) after status %s", got, err, status[0])
			}
		})
	}
}

// TestWriteTempName: the executor names the temporary file (so that it
// can remove it if init dies); init takes only a plain name with the
// temporary prefix, and refuses a name that exists.
func TestWriteTempName(t *testing.T) {
	for _, tc := range []struct {
		temp string
		ok   bool
	}{
		{"", true},
		{TempName(), true},
		{tempPrefix + "abc-DEF_123", true},
		{tempPrefix, false},
		{"x", false},
		{"../" + tempPrefix + "x", false},
		{tempPrefix + "a/b", false},
		{tempPrefix + "..", false},
		{tempPrefix + strings.Repeat("a", 33), false},
		{tempPrefix + "exists", false},
	} {
		tr := newWriteTree(t)
		must(t, os.WriteFile(filepath.Join(tr.ws, "dir", tempPrefix+"exists"), []byte("keep"), 0o644))
		werr := Write(WriteReq{Root: tr.ws, Rel: "dir/f", Mode: 0o644, Size: 1, Temp: tc.temp}, bytes.NewReader([]byte("x")))
		if (werr == nil) != tc.ok {
			t.Errorf("temp %q: %v, want ok %v", tc.temp, werr, tc.ok)
		}
		if got, _ := os.ReadFile(filepath.Join(tr.ws, "dir", tempPrefix+"exists")); string(got) != "keep" {
			t.Errorf("temp %q: an existing file of that name now holds %q", tc.temp, got)
		}
		ents, _ := os.ReadDir(filepath.Join(tr.ws, "dir"))
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), tempPrefix) && e.Name() != tempPrefix+"exists" {
				t.Errorf("temp %q: %s left behind", tc.temp, e.Name())
			}
		}
	}
}

// readFrames reads every frame init wrote: their types, and the payloads
// of the Exit frames.
func readFrames(out io.Reader) (types []Type, status [][]byte) {
	for {
		typ, p, err := ReadFrame(out)
		if err != nil {
			return types, status
		}
		types = append(types, typ)
		if typ == Exit {
			status = append(status, p)
		}
	}
}

// checkTwoWrites checks what init sent for a write followed by a write of
// "next" to the file next in the same container: ready, then started and
// exit for each; the first status holds want and says reusable; the
// second write landed.
func checkTwoWrites(t *testing.T, types []Type, status [][]byte, want, ws string) {
	t.Helper()
	if string(types) != "RSXSX" {
		t.Fatalf("frames %q, want ready, then started and exit for each of two writes", types)
	}
	if !bytes.Contains(status[0], []byte(want)) || !bytes.Contains(status[0], []byte(`"reusable":true`)) {
		t.Fatalf("status %s, want %s and reusable", status[0], want)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "next")); string(got) != "next" {
		t.Fatalf("the second write in the same container left %q", got)
	}
}

// must stops the test when a fixture cannot be made.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
