package snapshot_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbox/agentbox/snapshot"
)

// A shell command is bracketed by Begin and Finish; its changeset can then
// be listed, undone, or rolled back.
func Example() {
	ctx := context.Background()
	base, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(base)
	ws := filepath.Join(base, "ws")
	os.Mkdir(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n"), 0o644)

	st, err := snapshot.Open(ctx, filepath.Join(base, "state"), ws)
	if err != nil {
		panic(err)
	}
	call, err := st.Begin(ctx, snapshot.CallInfo{Session: "s1", Tool: "Bash", Summary: "rm main.go; touch new.go"}, snapshot.Whole())
	if err != nil {
		panic(err)
	}
	os.Remove(filepath.Join(ws, "main.go")) // the command runs here
	os.WriteFile(filepath.Join(ws, "new.go"), nil, 0o644)
	entry, err := call.Finish(ctx)
	if err != nil {
		panic(err)
	}
	for _, c := range entry.Changes {
		fmt.Println(entry.ID, c.Op, c.Path)
	}

	undo, err := st.Undo(ctx, "", false, snapshot.CallInfo{Session: "s1"})
	if err != nil {
		panic(err)
	}
	fmt.Println(undo.ID, "undid", undo.Reverts)
	_, err = os.Stat(filepath.Join(ws, "main.go"))
	fmt.Println("main.go back:", err == nil)
	// Output:
	// 000001 deleted main.go
	// 000001 added new.go
	// 000002 undid 000001
	// main.go back: true
}

// Single-file tools take only the target's pre-image.
func ExampleStore_Begin_file() {
	ctx := context.Background()
	base, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(base)
	ws := filepath.Join(base, "ws")
	os.Mkdir(ws, 0o755)
	st, _ := snapshot.Open(ctx, filepath.Join(base, "state"), ws)

	call, _ := st.Begin(ctx, snapshot.CallInfo{Tool: "Write", Summary: "docs/README.md"}, snapshot.File(filepath.Join(ws, "docs/README.md")))
	os.MkdirAll(filepath.Join(ws, "docs"), 0o755)
	os.WriteFile(filepath.Join(ws, "docs/README.md"), []byte("# hi\n"), 0o644)
	entry, _ := call.Finish(ctx)
	for _, c := range entry.Changes {
		fmt.Println(c.Op, c.Path)
	}
	// Output:
	// added docs
	// added docs/README.md
}

// A background job's changes are journaled when it ends; other calls run
// meanwhile and get their own entries.
func ExampleStore_BeginDetached() {
	ctx := context.Background()
	base, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(base)
	ws := filepath.Join(base, "ws")
	os.Mkdir(ws, 0o755)
	st, _ := snapshot.Open(ctx, filepath.Join(base, "state"), ws)

	job, _ := st.BeginDetached(ctx, snapshot.CallInfo{Tool: "Bash", Summary: "npm run dev"})
	os.WriteFile(filepath.Join(ws, "server.log"), []byte("listening\n"), 0o644) // the job runs

	fg, _ := st.Begin(ctx, snapshot.CallInfo{Tool: "Write", Summary: "a.txt"}, snapshot.File("a.txt"))
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	fe, _ := fg.Finish(ctx)

	je, _ := job.Finish(ctx) // the job ended
	for _, e := range []snapshot.Entry{fe, je} {
		for _, c := range e.Changes {
			fmt.Println(e.ID, e.Tool, c.Op, c.Path)
		}
	}
	// Output:
	// 000002 Write added a.txt
	// 000003 Bash added server.log
}
