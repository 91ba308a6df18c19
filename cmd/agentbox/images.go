package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/images"
	"github.com/agentbox/agentbox/sandbox/engine"
)

func init() { register(newImagesCmd) }

func newImagesCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "images",
		Short: "Build and list the sandbox images (built locally, no registry)",
	}
	var force, quiet bool
	build := &cobra.Command{
		Use:   "build [NAME...]",
		Short: "Build agentbox/minimal and agentbox/host (or the named ones) unless current",
		Long: `Build the sandbox images locally with BuildKit through the engine. An image
whose content is unchanged is not rebuilt. Progress goes to stderr; with
--json a summary array goes to stdout.

Names: ` + fmt.Sprint(images.Names()) + ` (or just "minimal", "host").`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			cli, _, err := engine.Connect(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer cli.Close()
			if len(args) == 0 {
				args = images.Names()
			}
			opts := []images.Option{
				images.WithWorkspace(cfg.Workspace),
				images.WithLogger(slog.New(slog.NewTextHandler(a.stderr(), nil))),
			}
			if !quiet {
				opts = append(opts, images.WithProgress(a.stderr()))
			}
			if force {
				opts = append(opts, images.WithForce())
			}
			opts = append(opts, images.WithInstaller(engine.InstallPackages))
			type row struct {
				images.Result
				Seconds float64 `json:"seconds"`
			}
			var rows []row
			for _, name := range args {
				res, err := images.BuildResult(cmd.Context(), cli, name, opts...)
				if err != nil {
					return err
				}
				rows = append(rows, row{res, res.Duration.Seconds()})
				if !a.jsonOut {
					state := "up to date"
					if res.Built {
						state = "built"
					}
					fmt.Fprintf(a.stdout(), "%s %s (%s) in %s\n", res.Name, state, imageShortID(res.ID), res.Duration.Round(time.Millisecond))
				}
			}
			if a.jsonOut {
				return json.NewEncoder(a.stdout()).Encode(rows)
			}
			return nil
		},
	}
	build.Flags().BoolVar(&force, "force", false, "rebuild even when the image is current")
	build.Flags().BoolVarP(&quiet, "quiet", "q", false, "no build progress")
	list := &cobra.Command{
		Use:   "list",
		Short: "List the agentbox images in the engine",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			cli, _, err := engine.Connect(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer cli.Close()
			list, err := images.List(cmd.Context(), cli)
			if err != nil {
				return err
			}
			if a.jsonOut {
				if list == nil {
					list = []images.Image{}
				}
				return json.NewEncoder(a.stdout()).Encode(list)
			}
			tw := tabwriter.NewWriter(a.stdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tKIND\tID\tOWNER\tBUILDER\tCREATED\tSIZE")
			for _, img := range list {
				ownerCol := "-"
				if img.UID != nil && img.GID != nil {
					ownerCol = fmt.Sprintf("%d:%d", *img.UID, *img.GID)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.1fMB\n", img.Name, img.Kind, imageShortID(img.ID), ownerCol, img.Builder,
					img.Created.Format(time.RFC3339), float64(img.Size)/1e6)
			}
			return tw.Flush()
		},
	}
	cmd.AddCommand(build, list)
	return cmd
}

func imageShortID(id string) string {
	if len(id) > 19 {
		return id[:19]
	}
	return id
}
