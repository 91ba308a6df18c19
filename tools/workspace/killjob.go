package workspace

import "context"

// KillJob stops one background job by id. Front ends call it when a
// session ends (an MCP session's jobs die with it). Killing an unknown or
// finished job is not an error worth reporting to anyone but the log.
func (s *Tools) KillJob(ctx context.Context, id string) error {
	if s.jobs == nil {
		return nil
	}
	_, err := s.jobs.Kill(ctx, id)
	return err
}
