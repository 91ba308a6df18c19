package tools

import (
	"context"
	"errors"
	"io/fs"
)

// ReadBeforeWrite enforces read-before-write for TrackWrite tools: an
// existing target must have been read by the session and be unchanged
// since. After a successful call it records the new content as read
// (TrackWrite) or what was read (TrackRead, unless the tool recorded a
// stamp itself). newEnv gives file access through the workspace root.
func ReadBeforeWrite(newEnv func(*Call) *Env) Stage {
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) Result {
			rt, ok := c.Tool.(ReadTracker)
			if !ok || rt.ReadTracking() == TrackNone {
				return next(ctx, c)
			}
			env := newEnv(c)
			paths := c.Paths
			if rt.ReadTracking() == TrackWrite {
				for _, p := range paths {
					if err := checkFresh(env, c.Session, p); err != nil {
						te := AsToolError(err)
						return Result{Content: te.Message, Display: string(te.Kind), Err: te}
					}
				}
			}
			// What the session knew before, to tell whether the tool
			// recorded a stamp of its own (the Read tool keeps its window).
			before := make([]ReadStamp, len(paths))
			had := make([]bool, len(paths))
			for i, p := range paths {
				before[i], had[i] = c.Session.LastRead(p)
			}
			res := next(ctx, c)
			if res.Err != nil {
				return res
			}
			for i, p := range paths {
				if rt.ReadTracking() == TrackRead {
					if cur, ok := c.Session.LastRead(p); ok && (!had[i] || cur != before[i]) {
						continue // recorded by the tool itself
					}
				}
				if st, err := env.Stamp(p); err == nil {
					c.Session.RecordRead(p, st)
				}
			}
			return res
		}
	}
}

func checkFresh(env *Env, s *Session, p string) error {
	fi, err := env.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // a new file needs no read
	}
	if err != nil {
		return Errorf(ErrValidation, "cannot check %s: %v", p, pathErrText(err))
	}
	if fi.IsDir() {
		return Errorf(ErrValidation, "%s is a directory, not a file", p)
	}
	last, ok := s.LastRead(p)
	if !ok {
		return Errorf(ErrConflict, "%s exists but has not been read in this session; read it with the Read tool first, then retry", p)
	}
	now, err := env.Stamp(p)
	if err != nil {
		return Errorf(ErrValidation, "cannot check %s: %v", p, pathErrText(err))
	}
	if !last.Same(now) {
		return Errorf(ErrConflict, "%s has changed since you last read it (by the user or another command); read it again with the Read tool, then retry", p)
	}
	return nil
}

func pathErrText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var te *ToolError
	if errors.As(err, &te) {
		return te.Message
	}
	return "unreadable"
}
