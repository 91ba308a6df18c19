// Package config loads agentbox's configuration into typed structs.
//
// Values come, lowest precedence first, from built-in defaults, the user's
// config file (~/.config/agentbox/config.yaml or --config FILE), AGENTBOX_*
// environment variables (AGENTBOX_SANDBOX_POOL_SIZE for sandbox.pool_size)
// and command-line flags. A key in a config file that agentbox does not know
// is an error that names the key and the file: a misspelt security setting
// must never be silently ignored.
//
// Each domain owns one section struct in its own file (Sandbox in
// sandbox.go, Snapshot in snapshot.go, ...) together with its defaults.
// A loaded *Config is read-only and safe for concurrent use.
//
// Being the bottom of the import graph, it also holds the few things
// every layer shares: the command timeouts (MaxTimeout, DefaultTimeout and
// ClampTimeout, the one rule that applies them),
// the "is this path inside the workspace" check (Within), the protection
// of paths a host program runs or loads (Protection, and Closure: the
// host-run closure computed from what the workspace holds at the moment
// of use, read through os.Root, never following a symlink out of the
// workspace, failing closed on what it cannot parse) and, in
// config/atomicfile, the one atomic durable file write.
package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// Config is the whole effective configuration.
type Config struct {
	// Workspace is the real (symlink-free) absolute path of the workspace.
	Workspace string `mapstructure:"workspace" yaml:"workspace"`
	// StateDir holds agentbox's state for all workspaces; never inside one.
	StateDir string `mapstructure:"state_dir" yaml:"state_dir"`

	Classifier Classifier `mapstructure:"classifier" yaml:"classifier"`
	Engine     Engine     `mapstructure:"engine" yaml:"engine"`
	Sandbox    Sandbox    `mapstructure:"sandbox" yaml:"sandbox"`
	Snapshot   Snapshot   `mapstructure:"snapshot" yaml:"snapshot"`
	Tools      Tools      `mapstructure:"tools" yaml:"tools"`
	MCP        MCP        `mapstructure:"mcp" yaml:"mcp"`
	Network    Network    `mapstructure:"network" yaml:"network"`

	// Sources says where each key's value came from ("default", "user
	// file PATH", "env NAME", "flag --NAME", "project PATH"); keys absent
	// came from the defaults. Filled by Load.
	Sources map[string]string `mapstructure:"-" yaml:"-" json:"-"`
	// File is the user or operator config file that was read ("" when
	// none). Filled by Load.
	File string `mapstructure:"-" yaml:"-" json:"-"`
	// StateDirNote is set when Load chose a state dir other than the
	// default because the default lies inside the workspace; it says so,
	// for the person. Filled by Load.
	StateDirNote string `mapstructure:"-" yaml:"-" json:"-"`
}

// ErrInvalid is wrapped by every error about bad configuration.
var ErrInvalid = errors.New("invalid configuration")

// Default returns the built-in defaults. Workspace and StateDir are left
// for Load to fill from the environment.
func Default() Config {
	return Config{
		Classifier: defaultClassifier(),
		Engine:     defaultEngine(),
		Sandbox:    defaultSandbox(),
		Snapshot:   defaultSnapshot(),
		Tools:      defaultTools(),
		MCP:        defaultMCP(),
		Network:    defaultNetwork(),
	}
}

// LoadOptions says where to look.
type LoadOptions struct {
	// File is an explicit config file (--config). When empty the user file
	// is used if it exists.
	File string
	// Flags are bound by name: a flag "state-dir" sets key "state_dir".
	Flags *pflag.FlagSet
	// Getenv defaults to os.Getenv; tests inject their own.
	Getenv func(string) string
}

// Load builds the effective configuration and validates it.
func Load(opts LoadOptions) (*Config, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	v := viper.New()
	def := Default()
	for key, val := range flatten(reflect.ValueOf(def), "") {
		v.SetDefault(key, val)
	}
	// Keys with an empty default still need registering so that
	// AGENTBOX_* variables reach Unmarshal.
	v.SetDefault("workspace", "")
	v.SetDefault("state_dir", "")

	sources := map[string]string{}
	file := opts.File
	if file == "" {
		if p := userConfigFile(getenv); p != "" {
			if _, err := os.Stat(p); err == nil {
				file = p
			}
		}
	}
	if file != "" {
		keys, err := mergeFile(v, file)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			sources[k] = userFileSource + file
		}
	}
	// Environment: AGENTBOX_ plus the key upper-cased with dots as
	// underscores. Read explicitly (not AutomaticEnv) so that every known
	// key is reachable and tests can inject the environment.
	for key := range KnownKeys() {
		name := "AGENTBOX_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
		if val := getenv(name); val != "" {
			v.Set(key, val)
			sources[key] = "env " + name
		}
	}
	if opts.Flags != nil {
		opts.Flags.VisitAll(func(f *pflag.Flag) {
			key := strings.ReplaceAll(f.Name, "-", "_")
			if _, known := KnownKeys()[key]; known && f.Changed {
				v.Set(key, f.Value.String())
				sources[key] = "flag --" + f.Name
			}
		})
	}
	var c Config
	if err := v.UnmarshalExact(&c); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := c.resolvePaths(getenv); err != nil {
		return nil, err
	}
	if file != "" {
		// A user file has every power (tokens, listen addresses, modes);
		// in the workspace the agent could rewrite it for the next start.
		abs, err := filepath.Abs(file)
		if err != nil {
			return nil, fmt.Errorf("%w: config file: %w", ErrInvalid, err)
		}
		if Within(abs, c.Workspace) || Within(ResolveExisting(abs), c.Workspace) {
			return nil, fmt.Errorf("%w: config file %s is inside the workspace %s, where sandboxed commands can rewrite it; keep it outside (the workspace's own %s may only tighten)", ErrInvalid, file, c.Workspace, ProjectFile)
		}
	}
	c.Sources = sources
	c.File = file
	// The workspace's own .agentbox/config.yaml comes last and may only
	// tighten (see project.go).
	if err := c.applyProject(filepath.Join(c.Workspace, ProjectFile)); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// userFileSource starts the Sources entry of a key set in a user file.
const userFileSource = "user file "

func mergeFile(v *viper.Viper, file string) ([]string, error) {
	fv, err := readFile(file)
	if err != nil {
		return nil, err
	}
	known := KnownKeys()
	var unknown []string
	for _, k := range fv.AllKeys() {
		if _, ok := known[k]; !ok && !underMapKey(k, known) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("%w: %s: unknown key %q", ErrInvalid, file, strings.Join(unknown, `", "`))
	}
	return fv.AllKeys(), v.MergeConfigMap(fv.AllSettings())
}

func readFile(file string) (*viper.Viper, error) {
	fv := viper.New()
	fv.SetConfigFile(file)
	fv.SetConfigType("yaml")
	if err := fv.ReadInConfig(); err != nil {
		if _, serr := os.Stat(file); errors.Is(serr, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: the config file %s does not exist", ErrInvalid, file)
		}
		return nil, fmt.Errorf("%w: reading %s: %w", ErrInvalid, file, err)
	}
	return fv, nil
}

// underMapKey reports whether k lies below a key whose value is a map
// (for example sandbox.env.FOO under sandbox.env).
func underMapKey(k string, known map[string]reflect.Kind) bool {
	for i := strings.LastIndexByte(k, '.'); i > 0; i = strings.LastIndexByte(k[:i], '.') {
		if kind, ok := known[k[:i]]; ok {
			return kind == reflect.Map
		}
	}
	return false
}

// KnownKeys lists every configuration key (dotted, lower case) with the
// kind of its value.
func KnownKeys() map[string]reflect.Kind {
	keys := map[string]reflect.Kind{}
	walk(reflect.ValueOf(Config{}), "", func(key string, v reflect.Value) { keys[key] = v.Kind() })
	return keys
}

// walk calls fn with the dotted key and value of every leaf field of the
// struct v (fields without a mapstructure name are not keys).
func walk(v reflect.Value, prefix string, fn func(string, reflect.Value)) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := f.Tag.Get("mapstructure")
		if name == "" || name == "-" {
			continue
		}
		key := prefix + name
		if f.Type.Kind() == reflect.Struct {
			walk(v.Field(i), key+".", fn)
			continue
		}
		fn(key, v.Field(i))
	}
}

// flatten is the struct v as dotted keys and their values.
func flatten(v reflect.Value, prefix string) map[string]any {
	out := map[string]any{}
	walk(v, prefix, func(key string, fv reflect.Value) { out[key] = fv.Interface() })
	return out
}

func userConfigFile(getenv func(string) string) string {
	if d := getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "agentbox", "config.yaml")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "agentbox", "config.yaml")
	}
	return ""
}

func (c *Config) resolvePaths(getenv func(string) string) error {
	ws := c.Workspace
	if ws == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
		ws = wd
	}
	real, err := RealDir(ws)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: the workspace %s does not exist; run agentbox in your project or pass --workspace DIR", ErrInvalid, ws)
	}
	if err != nil {
		return fmt.Errorf("%w: workspace: %w", ErrInvalid, err)
	}
	c.Workspace = real
	if c.StateDir == "" {
		base := getenv("XDG_STATE_HOME")
		if base == "" {
			home := getenv("HOME")
			if home == "" {
				return fmt.Errorf("%w: no state dir: set AGENTBOX_STATE_DIR or HOME", ErrInvalid)
			}
			base = filepath.Join(home, ".local", "state")
		}
		c.StateDir = filepath.Join(base, "agentbox")
		if Within(c.StateDir, c.Workspace) {
			// The workspace is the home directory (or holds the state
			// dir): state must live outside it, so take one that does.
			dir, err := fallbackStateDir()
			if err != nil {
				return fmt.Errorf("%w: the default state dir %s is inside the workspace %s and no other could be made (%w); set AGENTBOX_STATE_DIR or --state-dir to a directory outside it", ErrInvalid, c.StateDir, c.Workspace, err)
			}
			c.StateDirNote = fmt.Sprintf("the default state dir %s is inside the workspace %s, so agentbox keeps this workspace's state in %s (set AGENTBOX_STATE_DIR or --state-dir to choose)", c.StateDir, c.Workspace, dir)
			c.StateDir = dir
		}
	}
	sd, err := filepath.Abs(c.StateDir)
	if err != nil {
		return fmt.Errorf("%w: state dir: %w", ErrInvalid, err)
	}
	c.StateDir = sd
	return nil
}

// RealDir returns the absolute, symlink-free path of an existing directory.
func RealDir(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", p)
	}
	return real, nil
}

// WorkspaceStateDir is the per-workspace state directory: one subdirectory
// of the state dir per workspace, keyed by the workspace's real path.
func (c *Config) WorkspaceStateDir() string {
	sum := sha256.Sum256([]byte(c.Workspace))
	name := filepath.Base(c.Workspace)
	if name == "/" || name == "." {
		name = "root"
	}
	return filepath.Join(c.StateDir, "workspaces", name+"-"+hex.EncodeToString(sum[:6]))
}

// Validate checks cross-field rules. It returns an error wrapping
// ErrInvalid that names the offending key.
func (c *Config) Validate() error {
	// The workspace is symlink-free; the state dir may reach it through
	// a link (and need not exist yet).
	if Within(c.StateDir, c.Workspace) || Within(ResolveExisting(c.StateDir), c.Workspace) {
		return fmt.Errorf("%w: state_dir %s is inside the workspace %s; state must live outside it", ErrInvalid, c.StateDir, c.Workspace)
	}
	for _, check := range []func() error{c.Engine.validate, c.Sandbox.validate, c.Snapshot.validate, c.Tools.validate, c.MCP.validate, c.Classifier.validate, c.Network.validate} {
		if err := check(); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	return nil
}
