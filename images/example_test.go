package images_test

import (
	"context"
	"fmt"
	"os"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/images"
	"github.com/agentbox/agentbox/sandbox/engine"
)

// Build both sandbox images for a workspace (a no-op when they are
// current), then list what the engine has.
func ExampleBuild() {
	ctx := context.Background()
	cfg, err := config.Load(config.LoadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	cli, _, err := engine.Connect(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cli.Close()
	for _, name := range images.Names() {
		if err := images.Build(ctx, cli, name, images.WithWorkspace(cfg.Workspace), images.WithProgress(os.Stderr)); err != nil {
			fmt.Println(err)
			return
		}
	}
	list, _ := images.List(ctx, cli)
	for _, img := range list {
		fmt.Println(img.Name, img.Kind, img.ID)
	}
}

// The read-only bind mounts a runner adds to containers of the host image.
func ExampleHostMounts() {
	for _, m := range images.HostMounts() {
		if m.Source == "/usr" {
			fmt.Printf("%s -> %s (read-only)\n", m.Source, m.Target)
		}
	}
	// Output: /usr -> /usr (read-only)
}
