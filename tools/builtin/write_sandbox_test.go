package builtin

import (
	"bytes"
	"context"
	"errors"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/initproc"
	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/workspace"
)

// WriteFile runs the container init's own write code (initproc.Write) on
// the host, so that unit tests cover its path rules and error messages.
func (s *hostSandbox) WriteFile(ctx context.Context, req tools.WriteRequest) error {
	root := strings.TrimSuffix(req.Path, "/"+req.Rel)
	werr := initproc.Write(initproc.WriteReq{Root: root, Rel: req.Rel, Mode: uint32(req.Mode), Size: int64(len(req.Data))}, bytes.NewReader(req.Data))
	if werr == nil {
		return nil
	}
	we := &sandbox.WriteError{Path: werr.Path, Detail: werr.Error()}
	var en unix.Errno
	if errors.As(werr, &en) {
		we.Errno = unix.ErrnoName(en)
		we.Kind = sandbox.WriteErrorKind(we.Errno)
	}
	return workspace.SandboxWriteError(req, we)
}

func (s *scriptedSandbox) WriteFile(ctx context.Context, req tools.WriteRequest) error {
	return errors.New("scriptedSandbox: no writes")
}
