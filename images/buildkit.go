package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"

	"github.com/docker/docker/client"
	bkclient "github.com/moby/buildkit/client"
	"github.com/moby/buildkit/client/llb"
	"github.com/moby/buildkit/exporter/containerimage/exptypes"
	gateway "github.com/moby/buildkit/frontend/gateway/client"
	"github.com/moby/buildkit/util/progress/progressui"
	"github.com/tonistiigi/fsutil"
	"golang.org/x/sync/errgroup"
)

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}

// dialer is the subset of the Docker client BuildKit needs: the engine's
// hijacked /grpc (BuildKit control API) and /session endpoints.
type dialer interface {
	DialHijack(ctx context.Context, url, proto string, meta map[string][]string) (net.Conn, error)
}

// newBuildkit connects to the BuildKit embedded in the engine, the way
// buildx's "docker" driver does.
func newBuildkit(ctx context.Context, d dialer) (*bkclient.Client, error) {
	return bkclient.New(ctx, "",
		bkclient.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return d.DialHijack(ctx, "/grpc", "h2c", nil)
		}),
		bkclient.WithSessionDialer(func(ctx context.Context, proto string, meta map[string][]string) (net.Conn, error) {
			return d.DialHijack(ctx, "/session", proto, meta)
		}),
	)
}

// imageConfig is the part of an OCI image config the builder sets; the
// exporter fills in the layers.
type imageConfig struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Config       struct {
		Env        []string          `json:"Env,omitempty"`
		Cmd        []string          `json:"Cmd,omitempty"`
		WorkingDir string            `json:"WorkingDir,omitempty"`
		Labels     map[string]string `json:"Labels,omitempty"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// solve writes the spec's tree to a temporary directory, sends it to
// BuildKit as the local source "rootfs", copies it onto scratch owned by
// root and exports the result into the engine's image store as s.name.
func solve(ctx context.Context, cli *client.Client, s *spec, o *options) error {
	dir, err := os.MkdirTemp("", "agentbox-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := s.tree.materialize(dir); err != nil {
		return fmt.Errorf("preparing root file system: %w", err)
	}
	fs, err := fsutil.NewFS(dir)
	if err != nil {
		return err
	}

	var ic imageConfig
	ic.Architecture, ic.OS = runtime.GOARCH, "linux"
	ic.Config.Env, ic.Config.Cmd, ic.Config.WorkingDir, ic.Config.Labels = s.env, s.cmd, "/", s.labels
	ic.RootFS.Type, ic.RootFS.DiffIDs = "layers", []string{}
	cfgJSON, err := json.Marshal(ic)
	if err != nil {
		return err
	}

	bk, err := newBuildkit(ctx, cli)
	if err != nil {
		return fmt.Errorf("connecting to the engine's BuildKit: %w", err)
	}
	defer bk.Close()

	local := llb.Local("rootfs", llb.SharedKeyHint("agentbox-"+s.kind), llb.WithCustomName("agentbox "+s.kind+" root file system"))
	st := llb.Scratch().File(
		llb.Copy(local, "/", "/", &llb.CopyInfo{CopyDirContentsOnly: true}, llb.WithUIDGID(0, 0)),
		llb.WithCustomName("assemble "+s.name),
	)
	buildFunc := func(ctx context.Context, c gateway.Client) (*gateway.Result, error) {
		def, err := st.Marshal(ctx)
		if err != nil {
			return nil, err
		}
		res, err := c.Solve(ctx, gateway.SolveRequest{Definition: def.ToPB(), Evaluate: true})
		if err != nil {
			return nil, err
		}
		res.AddMeta(exptypes.ExporterImageConfigKey, cfgJSON)
		return res, nil
	}
	opt := bkclient.SolveOpt{
		Exports:     []bkclient.ExportEntry{{Type: "moby", Attrs: map[string]string{"name": s.name}}},
		LocalMounts: map[string]fsutil.FS{"rootfs": fs},
	}

	statusCh := make(chan *bkclient.SolveStatus)
	eg, ectx := errgroup.WithContext(ctx)
	eg.Go(func() error {
		_, err := bk.Build(ectx, opt, "agentbox", buildFunc, statusCh)
		return err
	})
	eg.Go(func() error {
		out := o.progress
		if out == nil {
			out = io.Discard
		}
		mode := progressui.PlainMode
		if o.progress == nil {
			mode = progressui.QuietMode
		}
		d, err := progressui.NewDisplay(out, mode)
		if err != nil {
			for range statusCh {
			}
			return err
		}
		_, err = d.UpdateFrom(context.WithoutCancel(ectx), statusCh)
		return err
	})
	return eg.Wait()
}
