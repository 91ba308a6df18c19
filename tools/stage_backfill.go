package tools

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/agentbox/agentbox/config"
)

// PathPolicy says where paths may point.
type PathPolicy struct {
	Workspace    string   // real absolute path
	Home         string   // for ~ ("" refuses ~)
	ReadOnlyDirs []string // readable by read-only calls
}

// Resolve turns one path as a model wrote it into an absolute, clean path
// inside the workspace (or, when readOnly, a read-only dir). cwd is the
// session's working directory.
func (pp PathPolicy) Resolve(p, cwd string, readOnly bool) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", Errorf(ErrValidation, "the path contains a NUL byte")
	}
	if len(p) > 4096 {
		return "", Errorf(ErrValidation, "the path is %d bytes long; paths are at most 4096", len(p))
	}
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		if pp.Home == "" {
			return "", Errorf(ErrValidation, "cannot expand ~ in %q: no home directory is known; use an absolute path", p)
		}
		p = filepath.Join(pp.Home, strings.TrimPrefix(p, "~"))
	case strings.HasPrefix(p, "~"):
		return "", Errorf(ErrValidation, "%q: ~user paths are not supported; use an absolute path", p)
	case !filepath.IsAbs(p):
		if cwd == "" {
			cwd = pp.Workspace
		}
		p = filepath.Join(cwd, p)
	}
	p = filepath.Clean(p)
	if config.Within(p, pp.Workspace) {
		return p, nil
	}
	for _, d := range pp.ReadOnlyDirs {
		if config.Within(p, d) {
			if readOnly {
				return p, nil
			}
			return "", Errorf(ErrPermissionDenied, "%s is in the read-only directory %s; only reading is allowed there", p, d)
		}
	}
	return "", Errorf(ErrPermissionDenied, "%s is outside the workspace %s; only paths inside the workspace can be used", p, pp.Workspace)
}

// Backfill expands ~, resolves relative paths against the session's cwd,
// fills empty `agentbox:"path,cwd"` fields with the cwd, and refuses paths
// outside the workspace (or, for read-only calls, the read-only dirs). It
// sets Call.Paths.
func Backfill(pp PathPolicy) Stage {
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) Result {
			if err := backfillParams(pp, c.Session.Cwd(), c.Tool, c.Params); err != nil {
				te := AsToolError(err)
				return Result{Content: te.Message, Display: string(te.Kind), Err: te}
			}
			c.Paths = pathsOf(c.Params)
			return next(ctx, c)
		}
	}
}

// backfillParams applies the path policy to params in place.
func backfillParams(pp PathPolicy, cwd string, t Tool, params any) error {
	v, ok := structValue(params)
	if !ok {
		return nil
	}
	readOnly := t.ReadOnly(params)
	for _, r := range rolesOf(v.Type()) {
		if !r.path {
			continue
		}
		f := v.FieldByIndex(r.index)
		s := f.String()
		if s == "" {
			if r.cwd {
				if cwd == "" {
					cwd = pp.Workspace
				}
				f.Set(reflect.ValueOf(cwd).Convert(f.Type()))
			}
			continue
		}
		// Names the tools showed escaped (see EncodeName) come back as bytes.
		abs, err := pp.Resolve(decodeName(s), cwd, readOnly)
		if err != nil {
			te := AsToolError(err)
			return Errorf(te.Kind, "%s: %s", r.json, te.Message)
		}
		f.Set(reflect.ValueOf(abs).Convert(f.Type()))
	}
	return nil
}
