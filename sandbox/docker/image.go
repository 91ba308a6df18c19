package docker

import (
	"context"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/client"

	"github.com/agentbox/agentbox/images"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/engine"
)

// ensureImage builds agentbox's own images when missing or stale and
// checks that any other image is in the engine's store.
func ensureImage(ctx context.Context, cli *client.Client, name, workspace string) error {
	if name == images.Minimal || name == images.Host {
		if err := images.Ensure(ctx, cli, name, images.WithWorkspace(workspace), images.WithInstaller(engine.InstallPackages)); err != nil {
			return fmt.Errorf("%w: image %s: %w", sandbox.ErrUnavailable, name, err)
		}
		return nil
	}
	if _, err := cli.ImageInspect(ctx, name); err != nil {
		if cerrdefs.IsNotFound(err) {
			return fmt.Errorf("%w: image %s is not in the engine's store", sandbox.ErrUnavailable, name)
		}
		return fmt.Errorf("%w: image %s: %w", sandbox.ErrUnavailable, name, err)
	}
	return nil
}

// imageDefaults are the host mounts and PATH the named image needs.
func imageDefaults(name string) (mounts []string, path string) {
	if name != images.Host {
		return nil, sandbox.Path
	}
	for _, m := range images.HostMounts() {
		if m.Source == m.Target {
			mounts = append(mounts, m.Source)
		}
	}
	return mounts, images.HostPath()
}
