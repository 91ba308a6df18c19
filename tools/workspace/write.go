package workspace

import (
	"context"

	"github.com/agentbox/agentbox/tools"
)

// WriteFile implements tools.Sandbox: the file is written by a warm
// container's init (sandbox.Runner.WriteFile).
func (l *lazySandbox) WriteFile(ctx context.Context, req tools.WriteRequest) error {
	r, err := l.get(ctx)
	if err != nil {
		return sandboxError(err)
	}
	return sandboxRunner{Runner: r}.WriteFile(ctx, req)
}
