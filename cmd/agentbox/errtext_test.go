package main

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/snapshot"
)

// TestUserMessage: errors read for people, and the errors themselves keep
// their wrapping.
func TestUserMessage(t *testing.T) {
	ws, _ := snapshotFixture(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"undo", "999999"}, "no call 999999 in this workspace's history (see `agentbox history`)"},
		{[]string{"diff", "000077"}, "no call 77 in this workspace's history (see `agentbox history`)"},
		{[]string{"rollback", "--to", "12"}, "no call 12 in this workspace's history (see `agentbox history`)"},
		{[]string{"undo", "abc"}, `"abc" is not a call id: use one of the numbers`},
		{[]string{"diff", "--session", "nope"}, `no journaled call of session "nope" (see ` + "`agentbox history`)"},
		{[]string{"history", "--limit", "x"}, `--limit wants a number, not "x" (see ` + "`agentbox history --help`)"},
		{[]string{"exec"}, "(see `agentbox exec --help`)"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			root := newRoot()
			root.SetOut(new(strings.Builder))
			root.SetErr(new(strings.Builder))
			root.SetArgs(append([]string{"--workspace", ws}, tc.args...))
			cmd, err := root.ExecuteC()
			if err == nil {
				t.Fatal("no error")
			}
			got := userMessage(cmd, err)
			if !strings.Contains(got, tc.want) || strings.Contains(got, "snapshot:") || strings.Contains(got, "strconv") {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
	// The wording changes; the error does not.
	_, _, err := runCLI(t, "--workspace", ws, "undo", "999999")
	if !errors.Is(err, snapshot.ErrNotFound) {
		t.Fatalf("%v does not wrap snapshot.ErrNotFound", err)
	}
	pe := fmt.Errorf("restoring: %w", &fs.PathError{Op: "lstat", Path: "/ws/a b", Err: fs.ErrNotExist})
	if got := userMessage(nil, pe); got != "restoring: /ws/a b: file does not exist" {
		t.Fatalf("path error: %q", got)
	}
}
