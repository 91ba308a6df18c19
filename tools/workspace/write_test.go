package workspace

import (
	"bytes"
	"context"
	"strings"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/initproc"
)

// WriteFile writes with the container init's own code, on the host,
// beneath "/" (the test workspaces are real paths).
func (h *hostRunner) WriteFile(ctx context.Context, w sandbox.FileWrite) error {
	h.calls++
	werr := initproc.Write(initproc.WriteReq{Root: "/", Rel: strings.TrimPrefix(w.Path, "/"), Mode: uint32(w.Mode), Size: int64(len(w.Content))}, bytes.NewReader(w.Content))
	if werr != nil {
		return &sandbox.WriteError{Path: werr.Path, Detail: werr.Error()}
	}
	return nil
}

func (jobRunner) WriteFile(ctx context.Context, w sandbox.FileWrite) error {
	return (&hostRunner{}).WriteFile(ctx, w)
}
