//go:build integration

package integration

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
)

// ensureTestImage imports a busybox rootfs as a throwaway image, tagged
// for this run alone (runs in parallel on one engine do not remove each
// other's image); removeTestImages removes it when the run ends.
func ensureTestImage(ctx context.Context, _ string) (string, error) {
	name := fmt.Sprintf("agentbox-test/busybox:run-%d", os.Getpid())
	bb, err := os.ReadFile("/usr/bin/busybox")
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := []string{"bin", "etc", "tmp", "root"}
	for _, d := range dirs {
		mode := int64(0o755)
		if d == "tmp" {
			mode = 0o1777
		}
		tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: mode})
	}
	tw.WriteHeader(&tar.Header{Name: "bin/busybox", Mode: 0o755, Size: int64(len(bb))})
	tw.Write(bb)
	for _, a := range []string{"sh", "ls", "cat", "echo", "true", "false", "sleep", "dd", "mknod", "chmod", "id", "ip", "nc", "head", "yes", "pwd", "mkdir", "ln", "rm", "stat", "wc", "seq", "kill", "test", "env", "touch", "cp", "ps", "grep", "sed", "awk", "tr", "printf", "nohup", "setsid", "ifconfig", "wget", "find", "mount", "chown", "su", "cut", "tail", "expr", "readlink", "mktemp", "xargs", "base64", "timeout"} {
		tw.WriteHeader(&tar.Header{Name: "bin/" + a, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777})
	}
	passwd := "root:x:0:0:root:/root:/bin/sh\n"
	tw.WriteHeader(&tar.Header{Name: "etc/passwd", Mode: 0o644, Size: int64(len(passwd))})
	io.WriteString(tw, passwd)
	tw.Close()
	rc, err := cli.ImageImport(ctx, image.ImportSource{Source: &buf, SourceName: "-"}, name, image.ImportOptions{})
	if err != nil {
		return "", fmt.Errorf("importing busybox: %w", err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if strings.Contains(string(b), `"error"`) {
		return "", fmt.Errorf("importing busybox: %s", b)
	}
	return name, nil
}

// imageIDs lists the IDs of the engine's images.
func imageIDs(ctx context.Context, f filters.Args) (map[string]bool, error) {
	list, err := cli.ImageList(ctx, image.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for _, im := range list {
		ids[im.ID] = true
	}
	return ids, nil
}

// removeTestImages removes this run's test image and the images the run
// left untagged (a forced rebuild untags the image it replaces), keeping
// every image that existed before the run. It reports how many it removed.
func removeTestImages(ctx context.Context, before map[string]bool) int {
	n := 0
	if testImage != "" {
		if _, err := cli.ImageRemove(ctx, testImage, image.RemoveOptions{PruneChildren: true}); err == nil {
			n++
		}
	}
	dangling, err := imageIDs(ctx, filters.NewArgs(filters.Arg("dangling", "true")))
	if err != nil {
		return n
	}
	for id := range dangling {
		if before[id] {
			continue
		}
		// Not forced: an image a container still uses stays.
		if _, err := cli.ImageRemove(ctx, id, image.RemoveOptions{PruneChildren: true}); err == nil {
			n++
		}
	}
	return n
}
