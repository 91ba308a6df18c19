package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// Validator is implemented by params with their own checks. Validate must
// be pure (no I/O); a plain error becomes a validation error.
type Validator interface {
	Validate() error
}

// ValidateStage checks the decoded params: required path fields are not
// empty, the params satisfy the tool's schema (ranges, enums), and the
// params' own Validate.
func ValidateStage() Stage {
	var cache sync.Map // Tool → *jsonschema.Resolved
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) Result {
			if err := validateParams(&cache, c.Tool, c.Params); err != nil {
				te := AsToolError(err)
				return Result{Content: te.Message, Display: string(te.Kind), Err: te}
			}
			return next(ctx, c)
		}
	}
}

// validateParams runs the checks of ValidateStage. cache may be nil.
func validateParams(cache *sync.Map, t Tool, params any) error {
	if v, ok := structValue(params); ok {
		for _, r := range rolesOf(v.Type()) {
			if (r.path || r.command) && v.FieldByIndex(r.index).String() == "" && !r.cwd {
				return Errorf(ErrValidation, "%s must not be empty", r.json)
			}
			if r.command && strings.IndexByte(v.FieldByIndex(r.index).String(), 0) >= 0 {
				return Errorf(ErrValidation, "%s contains a NUL byte", r.json)
			}
		}
	}
	var rs *jsonschema.Resolved
	if cache != nil {
		if x, ok := cache.Load(t); ok {
			rs = x.(*jsonschema.Resolved)
		}
	}
	if rs == nil {
		var err error
		rs, err = t.Schema().Resolve(nil)
		if err != nil {
			return Errorf(ErrInternal, "the %s tool's schema is invalid", t.Name())
		}
		if cache != nil {
			cache.Store(t, rs)
		}
	}
	// Validate the JSON form of the params, as the model would send them.
	raw, err := json.Marshal(params)
	if err != nil {
		return Errorf(ErrValidation, "the input cannot be encoded: %v", err)
	}
	var inst any
	if err := json.Unmarshal(raw, &inst); err != nil {
		return Errorf(ErrValidation, "the input cannot be decoded: %v", err)
	}
	if inst == nil {
		inst = map[string]any{}
	}
	if te := explainInvalid(rs.Schema(), inst, ""); te != nil {
		return te
	}
	if err := rs.Validate(inst); err != nil {
		return Errorf(ErrValidation, "invalid input: %s", humanSchemaError(err.Error()))
	}
	if v, ok := params.(Validator); ok {
		if err := v.Validate(); err != nil {
			var te *ToolError
			if errors.As(err, &te) {
				return te
			}
			return Errorf(ErrValidation, "%s", err.Error())
		}
	}
	return nil
}
