package engine_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox/engine"
)

// Connect to whichever engine answers and say how it was found.
func ExampleConnect() {
	ctx := context.Background()
	cfg, err := config.Load(config.LoadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	cli, info, err := engine.Connect(ctx, cfg)
	if errors.Is(err, engine.ErrNoEngine) {
		fmt.Println("no engine: run `agentbox engine start`")
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cli.Close()
	fmt.Printf("engine %s at %s (via %s)\n", info.Version, info.Host, info.Source)
}
