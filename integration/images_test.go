//go:build integration

package integration

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/agentbox/agentbox/images"
)

// TestImagesBuildAndRun builds both images against the real engine (cold,
// then warm), lists them, and runs a container from each.
func TestImagesBuildAndRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Outside /tmp (a tmpfs at run time) so the image's copy of the
	// workspace path is visible.
	ws, err := os.MkdirTemp("/var/tmp", "agentbox-images-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(ws)
	if err := os.Chown(ws, 4321, 4322); err != nil {
		t.Fatal(err)
	}
	for _, name := range images.Names() {
		cold, err := images.BuildResult(ctx, cli, name, images.WithWorkspace(ws), images.WithForce())
		if err != nil {
			t.Fatalf("build %s: %v", name, err)
		}
		warm, err := images.BuildResult(ctx, cli, name, images.WithWorkspace(ws))
		if err != nil {
			t.Fatalf("warm build %s: %v", name, err)
		}
		if !cold.Built || warm.Built || warm.ID != cold.ID {
			t.Errorf("%s: cold %+v, warm %+v: warm build should reuse the image", name, cold, warm)
		}
		t.Logf("%s: cold build %s, warm %s", name, cold.Duration.Round(time.Millisecond), warm.Duration.Round(time.Millisecond))
		if err := images.Ensure(ctx, cli, name, images.WithWorkspace(ws)); err != nil {
			t.Errorf("Ensure %s: %v", name, err)
		}
	}

	if err := images.Ensure(ctx, cli, "agentbox-test/never-built:1"); !errors.Is(err, images.ErrImageMissing) {
		t.Errorf("Ensure of a missing foreign image = %v, want ErrImageMissing", err)
	}

	list, err := images.List(ctx, cli)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]images.Image{}
	for _, img := range list {
		kinds[img.Name] = img
	}
	if img := kinds[images.Minimal]; img.Kind != "minimal" || img.Builder != images.BuilderVersion || img.Digest == "" {
		t.Errorf("list: minimal = %+v", img)
	}
	if img := kinds[images.Host]; img.Kind != "host" || img.UID == nil || *img.UID != 4321 || img.GID == nil || *img.GID != 4322 {
		t.Errorf("list: host = %+v, want owner 4321:4322", img)
	}

	t.Run("minimal", func(t *testing.T) {
		out, code := runImage(t, ctx, images.Minimal, "65534:65534", nil, nil, "/bin/sh", "-c", "echo ok; test -L /bin/sh && echo link; stat -c %a /bin/busybox")
		if code != 0 || out != "ok\nlink\n755\n" {
			t.Errorf("minimal: exit %d, output %q", code, out)
		}
	})
	// The import backend (for engines without BuildKit, e.g. Podman) must
	// give an image that runs the same way; BuildKit's build is restored after.
	t.Run("import-backend", func(t *testing.T) {
		res, err := images.BuildResult(ctx, cli, images.Minimal, images.WithForce(), images.WithBackend(images.BackendImport))
		if err != nil || res.Backend != images.BackendImport {
			t.Fatalf("import build: %+v %v", res, err)
		}
		out, code := runImage(t, ctx, images.Minimal, "65534:65534", nil, nil, "/bin/sh", "-c", "echo ok; stat -c %a /bin/busybox")
		if code != 0 || out != "ok\n755\n" {
			t.Errorf("imported minimal: exit %d, output %q", code, out)
		}
		res, err = images.BuildResult(ctx, cli, images.Minimal, images.WithForce())
		if err != nil || res.Backend != images.BackendBuildKit {
			t.Fatalf("rebuild with BuildKit: %+v %v", res, err)
		}
	})
	t.Run("host", func(t *testing.T) {
		env := []string{"PATH=" + images.HostPath()}
		script := `command -v git go python3; id -un; test -e /etc/shadow && echo SHADOW; test -e /home && echo HOME; test -e /root/.ssh && echo SSH; test -d ` + ws + ` && echo WS; true`
		out, code := runImage(t, ctx, images.Host, "4321:4322", images.HostMounts(), env, "bash", "-c", script)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(lines) != 5 {
			t.Fatalf("host: exit %d, output %q", code, out)
		}
		for i, tool := range []string{"git", "go", "python3"} {
			if !strings.HasSuffix(lines[i], "/"+tool) {
				t.Errorf("host: %s not found: %q", tool, lines[i])
			}
		}
		if lines[3] == "4321" || lines[3] == "" {
			t.Errorf("host: workspace owner has no passwd entry: id -un = %q", lines[3])
		}
		if lines[4] != "WS" {
			t.Errorf("host: secrets visible or workspace path missing: %q", lines[4:])
		}
	})
}

// runImage runs argv in a hardened throwaway container of img with the
// given read-only bind mounts and returns its combined output and exit code.
func runImage(t *testing.T, ctx context.Context, img, user string, binds []images.HostMount, env []string, argv ...string) (string, int) {
	t.Helper()
	var mounts []mount.Mount
	for _, b := range binds {
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: b.Source, Target: b.Target, ReadOnly: true})
	}
	created, err := cli.ContainerCreate(ctx,
		&container.Config{Image: img, Cmd: argv, User: user, Env: env, Labels: map[string]string{"org.agentbox.test": "images"}},
		&container.HostConfig{
			NetworkMode: "none", ReadonlyRootfs: true, CapDrop: []string{"ALL"},
			SecurityOpt: []string{"no-new-privileges"}, Tmpfs: map[string]string{"/tmp": "size=16m"},
			Mounts: mounts,
		}, nil, nil, "")
	if err != nil {
		t.Fatalf("create %s: %v", img, err)
	}
	defer cli.ContainerRemove(context.WithoutCancel(ctx), created.ID, container.RemoveOptions{Force: true})
	waitC, errC := cli.ContainerWait(ctx, created.ID, container.WaitConditionNextExit)
	if err := cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatalf("start %s: %v", img, err)
	}
	var code int
	select {
	case w := <-waitC:
		code = int(w.StatusCode)
	case err := <-errC:
		t.Fatalf("wait %s: %v", img, err)
	}
	rc, err := cli.ContainerLogs(ctx, created.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatalf("logs %s: %v", img, err)
	}
	defer rc.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, rc); err != nil {
		t.Fatalf("logs %s: %v", img, err)
	}
	if code != 0 {
		t.Logf("%s %q: exit %d\n%s", img, argv, code, out.String())
	}
	return out.String(), code
}
