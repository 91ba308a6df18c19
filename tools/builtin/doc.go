// Package builtin implements agentbox's built-in tools with Claude Code's
// names and parameters: [Read], [Write], [Edit], [MultiEdit], [Glob],
// [Grep], [LS], [Bash], [BashOutput] and [KillShell].
//
// It owns the tools' behaviour and their model-facing text; the pipeline in
// package tools owns everything around a call (decoding, path backfill and
// validation, permissions, snapshots, change capture, audit).
//
// Promises:
//   - Host-side file access (Read, Glob, Grep, LS) goes through os.Root, so a
//     path or symlink can never lead outside the workspace or a configured
//     read-only directory. FIFOs and devices are never opened.
//   - Files are never written from the host: Write, Edit and MultiEdit compute
//     the new content on the host and hand it to a sandbox container that
//     writes it (temp file, then rename, keeping the file's mode), gated on
//     the call's snapshot record reaching the disk (docs/gated-writes.md).
//   - Edit and MultiEdit are all-or-nothing: either every edit applies or the
//     file is left as it was.
//
// All tools are safe for concurrent use.
package builtin
