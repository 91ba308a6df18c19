// Package images defines agentbox's sandbox images and builds them locally
// with BuildKit through the Docker engine, so no registry is ever needed.
//
// Two images exist:
//
//   - Minimal ("agentbox/minimal"): the host's static busybox and its
//     applet links, nothing else.
//   - Host ("agentbox/host"): an empty skeleton — passwd and group for the
//     workspace owner, /tmp, mount points and the workspace's parents. At
//     run time the runner bind-mounts HostMounts read-only, which gives
//     commands the host's toolchain and none of its secrets.
//
// Each image's root file system is described in memory, hashed, written to
// a temporary directory and sent to the engine's BuildKit as a local
// source; the LLB result is exported with the "moby" exporter straight into
// the engine's image store, with its config (Env, Cmd, labels) set as
// result metadata. Images carry labels (LabelImage, LabelBuilder,
// LabelDigest, LabelUID, LabelGID); an image whose digest label matches
// what would be built is current and is not rebuilt.
//
// Functions are safe for concurrent use; building the same image twice at
// once does the work twice but leaves one consistent image.
package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// Image names (tag "latest" implied).
const (
	Minimal = "agentbox/minimal"
	Host    = "agentbox/host"
)

// BuilderVersion changes whenever the way images are built changes; images
// built by another version are rebuilt.
const BuilderVersion = "1"

// Labels on every image this package builds.
const (
	LabelImage   = "org.agentbox.image"   // "minimal" or "host"
	LabelBuilder = "org.agentbox.builder" // BuilderVersion
	LabelDigest  = "org.agentbox.digest"  // hash of the root file system and config
	LabelUID     = "org.agentbox.uid"     // host image: the workspace owner's uid
	LabelGID     = "org.agentbox.gid"     // host image: the workspace owner's gid
)

// ErrUnknownImage is wrapped when a name is not one of Names().
var ErrUnknownImage = errors.New("unknown image")

// Names lists the images this package can build.
func Names() []string { return []string{Minimal, Host} }

// Image is one agentbox image in the engine's store.
type Image struct {
	Name    string    `json:"name"`
	ID      string    `json:"id"`
	Kind    string    `json:"kind"`
	Builder string    `json:"builder"`
	Digest  string    `json:"digest"`
	UID     *int      `json:"uid,omitempty"`
	GID     *int      `json:"gid,omitempty"`
	Created time.Time `json:"created"`
	Size    int64     `json:"size"`
}

// Option configures Build and Ensure.
type Option func(*options)

type options struct {
	progress  io.Writer
	log       *slog.Logger
	force     bool
	owner     *owner
	workspace string
	backend   string
	install   func(ctx context.Context, pkgs ...string) error
}

// WithBackend picks how the image gets into the engine: BackendBuildKit or
// BackendImport. By default BuildKit is used when the engine offers its
// endpoints, the import API otherwise (Podman's Docker API).
func WithBackend(b string) Option { return func(o *options) { o.backend = b } }

// WithProgress writes BuildKit's plain progress output to w.
func WithProgress(w io.Writer) Option { return func(o *options) { o.progress = w } }

// WithLogger logs what the builder decides (skip, build, done).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithForce rebuilds even when the image is current.
func WithForce() Option { return func(o *options) { o.force = true } }

// WithWorkspace makes the host image for this workspace: its owner's uid
// and gid (from the directory) get passwd and group entries, and its path
// exists in the image. Without it the current user is the owner.
func WithWorkspace(dir string) Option { return func(o *options) { o.workspace = dir } }

// WithInstaller lets a build install the Debian packages it needs (the
// minimal image needs busybox-static) with install, when run as root;
// without it a missing package is an error that says what to install.
// The caller passes the installer (sandbox/engine.InstallPackages), so that
// this package depends on nothing above it.
func WithInstaller(install func(ctx context.Context, pkgs ...string) error) Option {
	return func(o *options) { o.install = install }
}

func newOptions(opts []Option) (*options, error) {
	o := &options{}
	for _, fn := range opts {
		fn(o)
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	uid, gid := os.Geteuid(), os.Getegid()
	if o.workspace != "" {
		fi, err := os.Stat(o.workspace)
		if err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			uid, gid = int(st.Uid), int(st.Gid)
		}
	}
	user, group := lookupOwner(uid, gid)
	o.owner = &owner{UID: uid, GID: gid, User: user, Grp: group, Workspace: o.workspace}
	return o, nil
}

// spec is everything needed to build one image.
type spec struct {
	name   string
	kind   string
	tree   *tree
	labels map[string]string
	env    []string
	cmd    []string
	digest string
}

func makeSpec(ctx context.Context, name string, o *options) (*spec, error) {
	s := &spec{name: name, env: []string{"PATH=" + defaultPath}, cmd: []string{"/bin/sh"}}
	switch name {
	case Minimal:
		bb, err := findBusybox(ctx, o.install)
		if err != nil {
			return nil, err
		}
		applets, err := busyboxApplets(ctx, bb)
		if err != nil {
			return nil, err
		}
		s.kind, s.tree = "minimal", minimalTree(bb, applets)
	case Host:
		s.kind, s.tree = "host", hostTree(*o.owner, hostLayout(osFS{}))
		s.env = []string{"PATH=" + HostPath()}
	default:
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownImage, name, strings.Join(Names(), ", "))
	}
	s.labels = map[string]string{LabelImage: s.kind, LabelBuilder: BuilderVersion}
	if s.kind == "host" {
		s.labels[LabelUID] = strconv.Itoa(o.owner.UID)
		s.labels[LabelGID] = strconv.Itoa(o.owner.GID)
	}
	d, err := s.tree.digest()
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", name, err)
	}
	// The digest covers the config too, so any change rebuilds.
	keys := make([]string, 0, len(s.labels))
	for k := range s.labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	cfg := []string{d, strings.Join(s.env, "\x00"), strings.Join(s.cmd, "\x00")}
	for _, k := range keys {
		cfg = append(cfg, k+"="+s.labels[k])
	}
	s.digest = shortHash(strings.Join(cfg, "\x01"))
	s.labels[LabelDigest] = s.digest
	if s.kind == "host" {
		addWorkspace(s.tree, o.owner.Workspace)
	}
	return s, nil
}

// Build builds the named image (Minimal or Host) into the engine's image
// store unless an identical one is already there (see WithForce).
func Build(ctx context.Context, cli *client.Client, name string, opts ...Option) error {
	_, err := build(ctx, cli, name, opts)
	return err
}

// ErrImageMissing is wrapped by Ensure when an image that agentbox does
// not build is not in the engine's store (no registry is ever used).
var ErrImageMissing = errors.New("image not in the engine's store")

// Ensure makes sure the named image is usable. Minimal and Host are built if
// missing or not current; any other image (one an operator names in
// config) must already be in the engine's store: there is no registry to
// pull from, so a missing one is an error wrapping ErrImageMissing.
func Ensure(ctx context.Context, cli *client.Client, name string, opts ...Option) error {
	if c := canonical(name); c == Minimal || c == Host {
		return Build(ctx, cli, c, opts...)
	}
	if _, err := cli.ImageInspect(ctx, name); err != nil {
		if cerrdefs.IsNotFound(err) {
			return fmt.Errorf("%w: %s (load or build it into the engine first; agentbox never pulls)", ErrImageMissing, name)
		}
		return fmt.Errorf("image %s: %w", name, err)
	}
	return nil
}

// Result says what Build did.
type Result struct {
	Name     string        `json:"name"`
	ID       string        `json:"id"`
	Digest   string        `json:"digest"`
	Built    bool          `json:"built"`             // false: it was already current
	Backend  string        `json:"backend,omitempty"` // how it was built, when it was
	Duration time.Duration `json:"duration_ns"`
}

// BuildResult is Build that also reports what it did.
func BuildResult(ctx context.Context, cli *client.Client, name string, opts ...Option) (Result, error) {
	return build(ctx, cli, name, opts)
}

func build(ctx context.Context, cli *client.Client, name string, opts []Option) (Result, error) {
	start := time.Now()
	name = canonical(name)
	o, err := newOptions(opts)
	if err != nil {
		return Result{}, err
	}
	s, err := makeSpec(ctx, name, o)
	if err != nil {
		return Result{}, err
	}
	res := Result{Name: name, Digest: s.digest}
	var oldID string
	if img, err := cli.ImageInspect(ctx, name); err == nil {
		oldID = img.ID
		if !o.force && img.Config != nil && img.Config.Labels[LabelDigest] == s.digest {
			o.log.Debug("image is current", "image", name, "digest", s.digest)
			res.ID, res.Duration = img.ID, time.Since(start)
			return res, nil
		}
	} else if !cerrdefs.IsNotFound(err) {
		return Result{}, fmt.Errorf("image %s: %w", name, err)
	}
	backend, err := pickBackend(ctx, cli, o)
	if err != nil {
		return Result{}, err
	}
	o.log.Info("building image", "image", name, "digest", s.digest, "backend", backend)
	if backend == BackendImport {
		err = importImage(ctx, cli, s)
	} else {
		err = solve(ctx, cli, s, o)
	}
	if err != nil {
		return Result{}, fmt.Errorf("building image %s (%s): %w", name, backend, err)
	}
	res.Backend = backend
	img, err := cli.ImageInspect(ctx, name)
	if err != nil {
		return Result{}, fmt.Errorf("image %s after build: %w", name, err)
	}
	if img.Config == nil || img.Config.Labels[LabelDigest] != s.digest {
		// A concurrent build (another owner's host image) tagged its own
		// image after ours. Either is a valid image of this name; the
		// runner sets the user numerically, so only names differ.
		o.log.Warn("image replaced by a concurrent build", "image", name, "want_digest", s.digest)
	}
	if oldID != "" && oldID != img.ID {
		// The replaced image is now untagged; drop it unless a container
		// still uses it (then the engine refuses and it stays).
		if _, err := cli.ImageRemove(ctx, oldID, image.RemoveOptions{PruneChildren: true}); err != nil {
			o.log.Debug("old image kept", "image", name, "id", oldID, "err", err)
		}
	}
	res.ID, res.Built, res.Duration = img.ID, true, time.Since(start)
	o.log.Info("built image", "image", name, "id", img.ID, "duration", res.Duration)
	return res, nil
}

// pickBackend honours WithBackend, else probes the engine's BuildKit
// endpoint.
func pickBackend(ctx context.Context, cli *client.Client, o *options) (string, error) {
	switch o.backend {
	case BackendBuildKit, BackendImport:
		return o.backend, nil
	case "":
	default:
		return "", fmt.Errorf("unknown image backend %q (want %s or %s)", o.backend, BackendBuildKit, BackendImport)
	}
	conn, err := cli.DialHijack(ctx, "/grpc", "h2c", nil)
	if err != nil {
		if ctx.Err() != nil {
			return "", context.Cause(ctx)
		}
		o.log.Warn("the engine offers no BuildKit endpoint; importing the image instead", "err", err)
		return BackendImport, nil
	}
	conn.Close()
	return BackendBuildKit, nil
}

// canonical maps "minimal", "agentbox/minimal:latest" and the like to the
// constant names; anything else is returned unchanged.
func canonical(name string) string {
	n := strings.TrimSuffix(name, ":latest")
	for _, known := range Names() {
		if n == known || "agentbox/"+n == known {
			return known
		}
	}
	return name
}

// List returns the agentbox images in the engine's store, by name.
func List(ctx context.Context, cli *client.Client) ([]Image, error) {
	sums, err := cli.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelImage))})
	if err != nil {
		return nil, fmt.Errorf("listing images: %w", err)
	}
	var out []Image
	for _, s := range sums {
		names := s.RepoTags
		if len(names) == 0 {
			names = []string{"<none>"}
		}
		for _, n := range names {
			img := Image{
				Name: strings.TrimSuffix(n, ":latest"), ID: s.ID, Kind: s.Labels[LabelImage],
				Builder: s.Labels[LabelBuilder], Digest: s.Labels[LabelDigest],
				Created: time.Unix(s.Created, 0).UTC(), Size: s.Size,
			}
			if v, err := strconv.Atoi(s.Labels[LabelUID]); err == nil {
				img.UID = &v
			}
			if v, err := strconv.Atoi(s.Labels[LabelGID]); err == nil {
				img.GID = &v
			}
			out = append(out, img)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
