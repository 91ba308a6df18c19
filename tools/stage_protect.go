package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agentbox/agentbox/tools/permission"
)

// Protection is what [ProtectStage] asks of the workspace's protection at
// the moment of a call (config.Closure implements it): whether a path is
// protected by name or by the host-run closure, and the content judge of
// a path protected by what a change does to its content (package.json's
// hook-relevant keys).
type Protection interface {
	Match(rel string) (reason string, protected bool)
	Judge(rel string) func(old, new []byte) (reason string, protected bool)
}

// ContentPreview is implemented by the params of a tool that writes one
// file whole (Write, Edit, MultiEdit): the content the call would leave
// given the file's current content (nil: absent); false when that cannot
// be known before the tool runs.
type ContentPreview interface {
	NewContent(old []byte) ([]byte, bool)
}

// ProtectStage makes a file-changing call (Write, Edit, MultiEdit: any
// tool that is not read-only and names paths) on a protected path ask, in
// every mode — bypassPermissions included — unless an explicit allow rule
// matched the call; in dontAsk mode it is refused. A protected path is
// one a host program may run or load (config.Protection) or one that a
// present trigger runs or loads (config.Closure of the workspace at the
// call; the composition root keeps it while nothing it depends on
// changed, config.ClosureCache); a content-judged path (package.json while a hook
// runner is present) asks only when the call's new content changes a
// protected part ([ContentPreview]; unknown content asks). The question
// says why. The path is checked as written and as it resolves beneath the
// workspace (a symlink into .git is no way around it). The approved paths
// are recorded on the call so that the snapshot stage keeps their changes.
func ProtectStage(protection func() Protection, workspace string, root *os.Root, mode permission.Mode) Stage {
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) Result {
			if protection == nil || c.Decision.Action == permission.Deny || c.Tool.ReadOnly(c.Params) {
				return next(ctx, c)
			}
			if c.HasCommand {
				return next(ctx, c) // shell commands: the changeset check (SnapshotStage)
			}
			if len(c.Paths) == 0 {
				return next(ctx, c)
			}
			prot := protection()
			var hits, rels, reasons []string
			for _, p := range c.Paths {
				forms := relForms(root, workspace, p)
				why, ok := protectedForm(prot, root, forms, c.Params)
				if ok {
					hits = append(hits, p)
					rels = append(rels, forms...)
					reasons = append(reasons, why)
				}
			}
			if len(hits) == 0 {
				return next(ctx, c)
			}
			// Kept after the call only if it runs, i.e. if allowed below.
			c.ProtectedApproved = rels
			if c.Match.Action == permission.Allow && c.Match.Rule != nil {
				return next(ctx, c)
			}
			reason := strings.Join(reasons, "; ")
			if mode == permission.ModeDontAsk {
				c.Decision = Decision{Action: permission.Deny, By: "protected", Reason: reason}
				return Fail(ErrPermissionDenied, "agentbox refused this %s call: %s. Changing it needs a person's approval, and mode dontAsk never asks; an operator can allow it with a rule such as %s(%s).",
					c.Tool.Name(), reason, c.Tool.Name(), ruleFor(workspace, hits[0]))
			}
			c.Decision = Decision{Action: permission.Ask, By: "protected", Reason: reason + " — a person must approve this change"}
			return next(ctx, c)
		}
	}
}

// protectedForm judges one path of a call in its workspace-relative
// forms (as written, as resolved): protected by name or closure, inside
// git metadata, or — for a content-judged path — by what the call's new
// content changes.
func protectedForm(prot Protection, root *os.Root, forms []string, params any) (string, bool) {
	for _, rel := range forms {
		if why, ok := prot.Match(rel); ok {
			return why, true
		}
		if inGitDir(rel) {
			return rel + " is inside git metadata (a file tool may create or change a repository there)", true
		}
	}
	for _, rel := range forms {
		judge := prot.Judge(rel)
		if judge == nil {
			continue
		}
		old, err := readRegular(root, rel)
		if err != nil {
			return rel + " is judged by what a change does to its content, and its current content cannot be read as a regular file", true
		}
		pv, ok := params.(ContentPreview)
		if !ok {
			return rel + " is judged by what a change does to its content, and this tool's content is not known before it runs", true
		}
		newData, ok := pv.NewContent(old)
		if !ok {
			return rel + " is judged by what a change does to its content, and this edit's result cannot be known before it runs", true
		}
		if why, ok := judge(old, newData); ok {
			return why, true
		}
	}
	return "", false
}

// relForms is the workspace-relative form of p as written and as it
// resolves beneath the workspace (ResolveBeneath: a missing tail through
// its nearest existing parent, a dangling symlink through its target).
func relForms(root *os.Root, workspace, p string) []string {
	var out []string
	add := func(q string) {
		if rel, err := filepath.Rel(workspace, q); err == nil && filepath.IsLocal(rel) {
			out = append(out, filepath.ToSlash(rel))
		}
	}
	add(p)
	if root != nil {
		if real, err := ResolveBeneath(root, workspace, p); err == nil && real != p {
			add(real)
		}
	}
	return out
}

func ruleFor(workspace, p string) string {
	if rel, err := filepath.Rel(workspace, p); err == nil && filepath.IsLocal(rel) {
		return "./" + filepath.ToSlash(rel)
	}
	return p
}

// keepFor is the snapshot Keep function of a call: changes to the
// workspace-relative paths the call was approved for (ProtectStage) are
// kept, when the path holds what the call's tool wrote there (if it
// wrote through Env.WriteFile); for anything else a
// person is asked whether to keep the change; without an answer (or with
// the non-interactive approver) everything is reverted.
func keepFor(c *Call, ap Approver) func(ctx context.Context, changes []ProtectedChange) []string {
	return func(ctx context.Context, changes []ProtectedChange) []string {
		ap := approverOf(c, ap)
		approved := map[string]bool{}
		for _, p := range c.ProtectedApproved {
			approved[p] = true
		}
		var keep []string
		var ask []ProtectedChange
		for _, ch := range changes {
			if approved[ch.Path] {
				// Approved for what the tool wrote, not for what a
				// running command may have put there since.
				// A call whose writes are tracked (the pipeline's) that
				// wrote nothing there did not make this change.
				if want, ok := c.protectedWrites.get(ch.Path); ok && ch.Hash == want || !ok && c.protectedWrites == nil {
					keep = append(keep, ch.Path)
					continue
				}
				ch.Reason += " (its content is not what this call wrote: something else changed it meanwhile)"
			}
			ask = append(ask, ch)
		}
		if len(ask) == 0 || ap == nil {
			return keep
		}
		var paths, why []string
		for _, ch := range ask {
			paths = append(paths, fmt.Sprintf("%s (%s)", ch.Path, ch.Op))
			why = append(why, ch.Reason)
		}
		req := ApprovalRequest{
			CallID: c.ID, Session: c.Session.ID, Tool: c.Tool.Name(), Input: c.Input,
			Summary: "keep this call's changes to protected paths: " + strings.Join(paths, ", "),
			Reason:  strings.Join(why, "; ") + ". Unless you allow it, agentbox reverts these changes now",
		}
		ans, err := ap.Approve(ctx, req)
		if err != nil || !ans.Allow {
			return keep
		}
		for _, ch := range ask {
			keep = append(keep, ch.Path)
		}
		return keep
	}
}

// maxJudgedBytes bounds what is read of a content-judged file.
const maxJudgedBytes = 8 << 20

// readRegular reads rel beneath root when it is a regular file (nil, nil
// when absent), without blocking on a FIFO.
func readRegular(root *os.Root, rel string) ([]byte, error) {
	if root == nil {
		return nil, nil
	}
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || st.Size() > maxJudgedBytes {
		return nil, fmt.Errorf("%s is not a regular file agentbox can judge", rel)
	}
	return io.ReadAll(io.LimitReader(f, maxJudgedBytes+1))
}

// inGitDir reports whether rel has a .git component above its last one:
// a file tool writing there may be assembling a repository piece by piece.
func inGitDir(rel string) bool {
	parts := strings.Split(rel, "/")
	for _, p := range parts[:len(parts)-1] {
		if p == ".git" {
			return true
		}
	}
	return false
}
