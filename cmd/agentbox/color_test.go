package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/snapshot"
)

func TestDiffColorizer(t *testing.T) {
	b, r, g, c, z := ansiBold, ansiRed, ansiGreen, ansiCyan, ansiReset
	cases := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", ""},
		{"full diff",
			"diff --agentbox a/f b/f\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n",
			b + "diff --agentbox a/f b/f" + z + "\n" + b + "--- a/f" + z + "\n" + b + "+++ b/f" + z + "\n" +
				c + "@@ -1,2 +1,2 @@" + z + "\n keep\n" + r + "-old" + z + "\n" + g + "+new" + z + "\n"},
		{"removed line that looks like a header",
			"@@ -1,2 +1 @@\n--- x\n-++ y\n+++ z\n",
			c + "@@ -1,2 +1 @@" + z + "\n" + r + "--- x" + z + "\n" + r + "-++ y" + z + "\n" + g + "+++ z" + z + "\n"},
		{"two hunks and the next file",
			"@@ -1 +1 @@\n-a\n+b\n@@ -5,0 +6,1 @@\n+c\ndiff --agentbox a/g b/g\nBinary or special content: x -> y\n",
			c + "@@ -1 +1 @@" + z + "\n" + r + "-a" + z + "\n" + g + "+b" + z + "\n" +
				c + "@@ -5,0 +6,1 @@" + z + "\n" + g + "+c" + z + "\n" +
				b + "diff --agentbox a/g b/g" + z + "\n" + b + "Binary or special content: x -> y" + z + "\n"},
		{"no newline marker", "@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n",
			c + "@@ -1 +1 @@" + z + "\n" + r + "-a" + z + "\n\\ No newline at end of file\n" + g + "+b" + z + "\n"},
		{"hunk header without counts: judged by prefix",
			"@@ x @@\n-a\n+b\n ctx\ndiff --x\n--- a/f\n",
			c + "@@ x @@" + z + "\n" + r + "-a" + z + "\n" + g + "+b" + z + "\n ctx\n" +
				b + "diff --x" + z + "\n" + b + "--- a/f" + z + "\n"},
		{"last line without newline", "@@ -1 +1 @@\n-a\n+b",
			c + "@@ -1 +1 @@" + z + "\n" + r + "-a" + z + "\n" + g + "+b" + z},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Whole, then one byte per Write, then split at every point:
			// the output must not depend on how the input was chunked.
			chunkings := [][]string{{tc.in}, strings.Split(tc.in, "")}
			for i := 0; i <= len(tc.in); i++ {
				chunkings = append(chunkings, []string{tc.in[:i], tc.in[i:]})
			}
			for _, chunks := range chunkings {
				var out bytes.Buffer
				cw := newDiffColorizer(&out)
				for _, ch := range chunks {
					n, err := cw.Write([]byte(ch))
					if err != nil || n != len(ch) {
						t.Fatalf("Write(%q) = %d, %v", ch, n, err)
					}
				}
				if err := cw.Close(); err != nil {
					t.Fatal(err)
				}
				if out.String() != tc.want {
					t.Fatalf("chunks %q:\n got %q\nwant %q", chunks, out.String(), tc.want)
				}
			}
		})
	}
}

func TestUseColor(t *testing.T) {
	env := func(noColor string) func(string) string {
		return func(k string) string {
			if k == "NO_COLOR" {
				return noColor
			}
			return ""
		}
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	cases := []struct {
		mode    string
		w       io.Writer
		json    bool
		noColor string
		want    bool
	}{
		{"always", &bytes.Buffer{}, false, "", true},
		{"always", pw, false, "1", true},
		{"always", &bytes.Buffer{}, true, "", false},
		{"never", &bytes.Buffer{}, false, "", false},
		{"auto", &bytes.Buffer{}, false, "", false},
		{"auto", pw, false, "", false}, // piped
		{"", pw, false, "", false},
	}
	for _, tc := range cases {

		got, err := useColor(tc.mode, tc.w, tc.json, env(tc.noColor))
		if err != nil || got != tc.want {
			t.Errorf("useColor(%q, %T, json=%v, NO_COLOR=%q) = %v, %v; want %v", tc.mode, tc.w, tc.json, tc.noColor, got, err, tc.want)
		}
	}
	if _, err := useColor("sometimes", pw, false, env("")); err == nil {
		t.Error("useColor accepted an unknown mode")
	}
}

func TestDiffColorFlag(t *testing.T) {
	ws, st := snapshotFixture(t)
	ctx := context.Background()
	c, err := st.Begin(ctx, snapshot.CallInfo{Session: "s1", Tool: "Write", Summary: "write a.txt"}, snapshot.Whole())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := c.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()

	out, _, err := runCLI(t, "--workspace", ws, "diff", "--color", "always", e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, ansiGreen+"+hi"+ansiReset+"\n") || !strings.Contains(out, ansiCyan+"@@") {
		t.Fatalf("--color always: no colour in %q", out)
	}
	plain, _, err := runCLI(t, "--workspace", ws, "diff", "--color", "never", e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain, "\x1b") || !strings.Contains(plain, "+hi\n") {
		t.Fatalf("--color never: %q", plain)
	}
	// Stripping the escapes from the coloured diff gives the plain one.
	stripped := out
	for _, esc := range []string{ansiReset, ansiBold, ansiRed, ansiGreen, ansiCyan} {
		stripped = strings.ReplaceAll(stripped, esc, "")
	}
	if stripped != plain {
		t.Fatalf("coloured diff differs from plain beyond escapes:\n%q\n%q", stripped, plain)
	}
	// auto into a buffer (not a terminal) is plain, and so is --json.
	auto, _, err := runCLI(t, "--workspace", ws, "diff", e.ID)
	if err != nil || auto != plain {
		t.Fatalf("auto, piped: %v %q", err, auto)
	}
	js, _, err := runCLI(t, "--workspace", ws, "--json", "diff", "--color", "always", e.ID)
	if err != nil || strings.Contains(js, `\u001b`) || strings.Contains(js, "\x1b") {
		t.Fatalf("--json: %v %q", err, js)
	}
	if _, _, err := runCLI(t, "--workspace", ws, "diff", "--color", "sometimes", e.ID); err == nil {
		t.Fatal("--color sometimes accepted")
	}
}
