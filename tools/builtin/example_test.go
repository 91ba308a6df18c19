package builtin_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/builtin"
)

// Register adds the built-in tools to a registry; a pipeline then serves
// them to agents.
func ExampleRegister() {
	reg := tools.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		panic(err)
	}
	for _, t := range reg.List() {
		p := t.NewParams()
		fmt.Printf("%-10s %-7s read-only=%v\n", t.Name(), t.Kind(), t.ReadOnly(p))
	}
	// Output:
	// Bash       execute read-only=false
	// BashOutput read    read-only=true
	// KillShell  execute read-only=false
	// Glob       search  read-only=true
	// Grep       search  read-only=true
	// LS         read    read-only=true
	// Read       read    read-only=true
	// Edit       edit    read-only=false
	// MultiEdit  edit    read-only=false
	// Write      edit    read-only=false
}

// A tool can also be run directly with an Env, as the pipeline does after
// its checks. Read only needs the workspace root and a session.
func ExampleRead() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	dir, _ = filepath.EvalSymlinks(dir)
	os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello\nworld\n"), 0o644)
	root, _ := os.OpenRoot(dir)
	defer root.Close()
	env := &tools.Env{Workspace: dir, Root: root, Session: tools.NewSession("s", dir)}

	res, err := builtin.Read.Run(context.Background(), env, &builtin.ReadParams{FilePath: filepath.Join(dir, "hello.txt")})
	if err != nil {
		panic(err)
	}
	fmt.Print(res.Content)
	// Output:
	//      1	hello
	//      2	world
}
