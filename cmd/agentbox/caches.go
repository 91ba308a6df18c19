package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/agentbox/agentbox/tools/termtext"
)

func init() { register(newCachesCmd) }

// cachesReport is `agentbox caches list --json`.
type cachesReport struct {
	Home       string                 `json:"home"`
	Caches     []sandbox.DepCache     `json:"dependency_caches"`
	Skipped    []sandbox.SkippedCache `json:"skipped,omitempty"`
	BuildCache *buildCacheReport      `json:"build_cache"`
	Identity   sandbox.GitIdentity    `json:"git_identity"`
}

type buildCacheReport struct {
	Dir      string `json:"dir"`
	Mount    string `json:"mount"`
	Bytes    int64  `json:"bytes"`
	Files    int    `json:"files"`
	MaxBytes int64  `json:"max_bytes"`
}

func newCachesCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "caches",
		Short: "List or clear the caches sandboxed commands get",
		Long: `Sandboxed commands get the workspace owner's dependency caches (Go
module cache, cargo registry and git checkouts, npm and pnpm stores)
read-only at their own paths, and a per-workspace build cache (GOCACHE,
XDG_CACHE_HOME, pip and npm caches) that only sandboxed commands write,
kept in the state dir and capped by sandbox.build_cache_max_mb.`,
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "Show the dependency caches mounted, those left out and why, and the build cache's size",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			rep, err := cachesOf(cfg)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return writeJSON(a.stdout(), rep)
			}
			tw := tabwriter.NewWriter(a.stdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "cache\tpath\tmount")
			for _, c := range rep.Caches {
				how := "read-only"
				if c.InWorkspace {
					how = "inside the workspace (environment only)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Kind, termtext.Line(c.Path), how)
			}
			for _, s := range rep.Skipped {
				fmt.Fprintf(tw, "%s\t%s\tnot mounted: %s\n", s.Kind, termtext.Line(s.Path), termtext.Line(s.Reason))
			}
			if b := rep.BuildCache; b != nil {
				fmt.Fprintf(tw, "build\t%s\tread-write at %s, %s in %d files (cap %s)\n", termtext.Line(b.Dir), b.Mount, mib(b.Bytes), b.Files, mib(b.MaxBytes))
			} else {
				fmt.Fprintln(tw, "build\t-\toff (sandbox.build_cache_max_mb: 0)")
			}
			return tw.Flush()
		},
	}
	clearCmd := &cobra.Command{
		Use:   "clear",
		Short: "Empty this workspace's build cache (dependency caches are the host's and are never touched)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			bc := buildCacheOf(cfg)
			u, err := bc.Clear()
			if err != nil {
				return fmt.Errorf("clearing %s: %w", bc.Dir, err)
			}
			if a.jsonOut {
				return writeJSON(a.stdout(), map[string]any{"dir": bc.Dir, "removed_bytes": u.Bytes, "removed_files": u.Files})
			}
			fmt.Fprintf(a.stdout(), "cleared %s: %s in %d files\n", termtext.Line(bc.Dir), mib(u.Bytes), u.Files)
			return nil
		},
	}
	cmd.AddCommand(list, clearCmd)
	return cmd
}

// buildCacheOf is the workspace's build cache, whether or not it is on.
func buildCacheOf(cfg *config.Config) *sandbox.BuildCache {
	return &sandbox.BuildCache{Dir: cfg.WorkspaceStateDir() + "/" + docker.BuildCacheSubdir, MaxBytes: cfg.Sandbox.BuildCacheMaxMB << 20}
}

func cachesOf(cfg *config.Config) (*cachesReport, error) {
	tc, err := docker.PlanToolchains(cfg, "")
	if err != nil {
		return nil, err
	}
	rep := &cachesReport{Home: tc.Home, Caches: tc.Caches, Skipped: tc.Skipped, Identity: tc.Identity}
	if tc.BuildCache != nil {
		u, err := tc.BuildCache.Usage()
		if err != nil {
			return nil, fmt.Errorf("build cache %s: %w", tc.BuildCache.Dir, err)
		}
		rep.BuildCache = &buildCacheReport{Dir: tc.BuildCache.Dir, Mount: sandbox.BuildCacheDir, Bytes: u.Bytes, Files: u.Files, MaxBytes: tc.BuildCache.MaxBytes}
	}
	return rep, nil
}

func mib(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// cacheSummary is one line for doctor.
func cacheSummary(rep *cachesReport) string {
	var kinds []string
	for _, c := range rep.Caches {
		kinds = append(kinds, c.Kind+" "+c.Path)
	}
	s := "none"
	if len(kinds) > 0 {
		s = strings.Join(kinds, ", ")
	}
	s = "read-only: " + s
	if b := rep.BuildCache; b != nil {
		s += fmt.Sprintf("; build cache %s of %s at %s", mib(b.Bytes), mib(b.MaxBytes), b.Dir)
	} else {
		s += "; build cache off"
	}
	if len(rep.Skipped) > 0 {
		s += fmt.Sprintf("; %d left out (agentbox caches list)", len(rep.Skipped))
	}
	return s
}
