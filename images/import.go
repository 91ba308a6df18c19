package images

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// Backends that can put an image into the engine's store.
const (
	BackendBuildKit = "buildkit" // LLB solved by the engine's BuildKit (the default)
	BackendImport   = "import"   // a root file system tar through the image import API
)

// importImage is the fallback for engines without BuildKit endpoints
// (Podman's Docker API, or a daemon with BuildKit disabled): the tree is
// streamed as a tar, owned by root, and imported with its config applied
// as changes.
func importImage(ctx context.Context, cli client.ImageAPIClient, s *spec) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(s.tree.writeTar(pw)) }()
	defer pr.Close()
	changes := []string{}
	for _, e := range s.env {
		k, v, _ := strings.Cut(e, "=")
		changes = append(changes, fmt.Sprintf("ENV %s=%s", k, v))
	}
	cmd, _ := json.Marshal(s.cmd)
	changes = append(changes, "CMD "+string(cmd), "WORKDIR /")
	keys := make([]string, 0, len(s.labels))
	for k := range s.labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		changes = append(changes, fmt.Sprintf("LABEL %s=%s", k, s.labels[k]))
	}
	rc, err := cli.ImageImport(ctx, image.ImportSource{Source: pr, SourceName: "-"}, s.name, image.ImportOptions{Changes: changes})
	if err != nil {
		return fmt.Errorf("importing: %w", err)
	}
	defer rc.Close()
	// The answer is a JSON message stream; an error can arrive in it.
	dec := json.NewDecoder(rc)
	for {
		var msg struct {
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&msg); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("importing: reading the answer: %w", err)
		}
		if msg.Error != "" {
			return fmt.Errorf("importing: %s", msg.Error)
		}
	}
}

// writeTar writes the tree as a tar of a root file system, every entry
// owned by root, with a fixed modification time.
func (t *tree) writeTar(w io.Writer) error {
	tw := tar.NewWriter(w)
	mtime := time.Unix(0, 0)
	for _, e := range t.sorted() {
		h := &tar.Header{
			Name:    strings.TrimPrefix(e.Path, "/"),
			Mode:    int64(e.Mode.Perm()),
			ModTime: mtime,
			Format:  tar.FormatPAX,
		}
		if e.Mode&os.ModeSticky != 0 {
			h.Mode |= 0o1000
		}
		var data []byte
		switch {
		case e.Mode.IsDir():
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		case e.Mode&os.ModeSymlink != 0:
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.Link
		default:
			h.Typeflag = tar.TypeReg
			data = e.Data
			if e.From != "" {
				var err error
				if data, err = os.ReadFile(e.From); err != nil {
					return err
				}
			}
			h.Size = int64(len(data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	return tw.Close()
}
