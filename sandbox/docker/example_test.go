package docker_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
)

// Open a Runner for the configured workspace and run one shell command.
// (Needs an engine; not run by go test.)
func ExampleOpen() {
	ctx := context.Background()
	cfg, err := config.Load(config.LoadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := docker.Open(ctx, cfg, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close(ctx)
	res, err := r.Run(ctx, sandbox.Spec{Shell: "go test ./... 2>&1 | tail -5", OutputCap: 64 << 10})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("exit %d, cwd %s\n%s", res.ExitCode, res.Cwd, res.Stdout)
}
