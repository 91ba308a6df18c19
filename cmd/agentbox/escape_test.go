package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentbox/agentbox/snapshot"
)

// terminalSafe reports the first rune in s a terminal could act on
// (anything but printable text, newline and tab), allowing the colour
// escapes this program adds itself when colour is true.
func terminalSafe(s string, colour bool) (rune, bool) {
	if colour {
		for _, c := range []string{ansiReset, ansiBold, ansiRed, ansiGreen, ansiCyan} {
			s = strings.ReplaceAll(s, c, "")
		}
	}
	if !utf8.ValidString(s) {
		return utf8.RuneError, false
	}
	for _, r := range s {
		if r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r < 0xa0 || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 {
			return r, false
		}
	}
	return 0, true
}

// A command's summary, the paths it created and their content reach the
// terminal escaped in history, diff and undo output.
func TestSnapshotCommandsEscape(t *testing.T) {
	ws, st := snapshotFixture(t)
	ctx := context.Background()
	summary := "Bash: printf x\x1b[1A\x1b[2K\rls -l\x1b]52;c;Y3VybCB4fHNo\x07\u009b2J\u202e\b\x7f\xff"
	name := "e\x1b[31mvil\u202etxt.sh"
	c, err := st.Begin(ctx, snapshot.CallInfo{Session: "s\x1b[2J", Tool: "Bash", Summary: summary}, snapshot.Whole())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, name), []byte("ok\n\x1b]52;c;eA==\x07\u009b\r\nbad\xfe\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := c.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()

	tests := []struct {
		name   string
		args   []string
		colour bool
		want   []string
	}{
		{"history", []string{"history"}, false, []string{`Bash: printf x\x1b[1A\x1b[2K\rls -l\x1b]52;c;Y3VybCB4fHNo\x07`, `s\x1b[2J`, `A e\x1b[31mvil\u202etxt.sh`}},
		{"diff", []string{"diff", "--color=never", e.ID}, false, []string{`e\x1b[31mvil\u202etxt.sh`, `+\x1b]52;c;eA==\x07\u009b\r`, `+bad\xfe`}},
		{"diff in colour", []string{"diff", "--color=always", e.ID}, true, []string{`e\x1b[31mvil\u202etxt.sh`, ansiGreen + `+\x1b]52;c;eA==\x07\u009b\r` + ansiReset}},
		{"undo", []string{"undo", e.ID}, false, []string{`D e\x1b[31mvil\u202etxt.sh`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, err := runCLI(t, append([]string{"--workspace", ws}, tt.args...)...)
			if err != nil {
				t.Fatalf("%v: %v\n%s", tt.args, err, errOut)
			}
			for _, want := range tt.want {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if r, ok := terminalSafe(out+errOut, tt.colour); !ok {
				t.Errorf("output holds %U raw:\n%q", r, out)
			}
		})
	}
}

// history --json keeps the exact values while no raw control or bidi
// character reaches the terminal.
func TestHistoryJSONEscapes(t *testing.T) {
	ws, st := snapshotFixture(t)
	ctx := context.Background()
	summary := "Bash: x\x1b[2J\u009b2J\u202eexe\x7f"
	c, err := st.Begin(ctx, snapshot.CallInfo{Session: "s", Tool: "Bash", Summary: summary}, snapshot.Whole())
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(ws, "f\u202e.txt"), []byte("x"), 0o644))
	if _, err := c.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	st.Close()
	out, _, err := runCLI(t, "--workspace", ws, "history", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := terminalSafe(out, false); !ok {
		t.Errorf("holds %U raw: %q", r, out)
	}
	var got []historyEntry
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 1 {
		t.Fatalf("%v: %s", err, out)
	}
	if got[0].Summary != summary || got[0].Changes[0].Path != "f\u202e.txt" {
		t.Errorf("values changed: %+v", got[0])
	}
}

func TestPrintEntryCutsThenEscapes(t *testing.T) {
	// A cut in the middle of a multi-byte rune or an escape sequence must
	// not leave anything raw or invalid.
	tests := []struct{ summary, want string }{
		{strings.Repeat("é", 34) + "\x1b[2J" + strings.Repeat("x", 60), `\x1b...`},
		{strings.Repeat("é", 50), strings.Repeat("é", 34) + "..."},
		{"ls\x1b]52;c;eA==\a", `ls\x1b]52;c;eA==\x07`},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		printEntry(&b, snapshot.Entry{ID: "c1", CallInfo: snapshot.CallInfo{Tool: "Bash", Summary: tt.summary}}, "", false)
		if r, ok := terminalSafe(b.String(), false); !ok {
			t.Errorf("holds %U: %q", r, b.String())
		}
		if !strings.Contains(b.String(), tt.want) {
			t.Errorf("%q lacks %q", b.String(), tt.want)
		}
	}
}

func TestEscapeWriter(t *testing.T) {
	var b bytes.Buffer
	w := &escapeWriter{w: &b}
	// Split a two-byte rune and an escape across writes.
	for _, p := range []string{"a\xc3", "\xa9\x1b", "[2J\nlast\u009b"} {
		w.Write([]byte(p))
	}
	if got := b.String(); got != "aé\\x1b[2J\n" {
		t.Fatalf("before Close: %q", got)
	}
	w.Close()
	if got, want := b.String(), "aé\\x1b[2J\nlast\\u009b"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
