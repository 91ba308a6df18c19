package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/spf13/viper"
)

// ProjectFile is the workspace's own config, relative to the workspace.
const ProjectFile = ".agentbox/config.yaml"

// How a project config may change a key: only ever towards stricter.
type tighten int

const (
	tightenAppend  tighten = iota + 1 // lists: entries are added, none removed
	tightenLower                      // numbers and durations: only lower, never 0 (unlimited)
	tightenMode                       // tools.mode: only a stricter mode
	tightenFalse                      // booleans that relax a check: only false
	tightenSubset                     // lists of permissions: entries are removed, none added
	tightenNetMode                    // network.mode: only a stricter mode
)

// projectKeys lists what a project config may set. Every other key is an
// error: a repository must not be able to loosen the sandbox, the
// classifier or the permission rules of whoever runs an agent in it.
var projectKeys = map[string]tighten{
	"tools.deny":                 tightenAppend,
	"tools.ask":                  tightenAppend,
	"tools.secrets":              tightenAppend,
	"tools.mode":                 tightenMode,
	"tools.auto_allow_sandboxed": tightenFalse,
	"tools.max_output_bytes":     tightenLower,
	"tools.max_input_bytes":      tightenLower,
	"tools.parallelism":          tightenLower,
	"classifier.dangerous":       tightenAppend,
	"classifier.forbidden":       tightenAppend,
	"classifier.trust_git_reads": tightenFalse,
	"classifier.max_bytes":       tightenLower,
	"classifier.max_depth":       tightenLower,
	"classifier.max_commands":    tightenLower,
	"sandbox.protected_paths":    tightenAppend,
	"sandbox.default_timeout":    tightenLower,
	"sandbox.max_timeout":        tightenLower,
	"sandbox.output_cap":         tightenLower,
	"sandbox.memory_mb":          tightenLower,
	"sandbox.cpus":               tightenLower,
	"sandbox.pids_limit":         tightenLower,
	"sandbox.tmp_size_mb":        tightenLower,
	"sandbox.nofile":             tightenLower,
	"sandbox.file_size_mb":       tightenLower,
	"sandbox.nproc":              tightenLower,
	"snapshot.max_call_bytes":    tightenLower,
	"sandbox.build_cache_max_mb": tightenLower,
	"sandbox.git_identity":       tightenFalse,
	"network.mode":               tightenNetMode,
	"network.allow":              tightenSubset,
	"network.deny":               tightenAppend,
	"network.fetch_max_bytes":    tightenLower,
	"network.fetch_timeout":      tightenLower,
}

// applyProject merges the project file (if it exists) into c, refusing
// anything that would loosen the configuration.
func (c *Config) applyProject(file string) error {
	if _, err := os.Lstat(file); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	fi, err := os.Stat(file)
	if err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: project config %s is not a regular file", ErrInvalid, file)
	}
	fv, err := readFile(file)
	if err != nil {
		return err
	}
	keys := fv.AllKeys()
	sort.Strings(keys)
	known := KnownKeys()
	for _, k := range keys {
		if _, ok := known[k]; !ok {
			return fmt.Errorf("%w: %s: unknown key %q", ErrInvalid, file, k)
		}
		if _, ok := projectKeys[k]; !ok {
			return fmt.Errorf("%w: %s: %s cannot be set by a project config, which may only tighten (add deny/ask rules, lower limits, pick a stricter mode); set it in your user config instead", ErrInvalid, file, k)
		}
	}
	// Decode the project values with the current ones as defaults, so
	// that types are converted exactly as for the other layers.
	pv := viper.New()
	for k, val := range flatten(reflect.ValueOf(*c), "") {
		pv.SetDefault(k, val)
	}
	if err := pv.MergeConfigMap(fv.AllSettings()); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalid, file, err)
	}
	var p Config
	if err := pv.UnmarshalExact(&p); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalid, file, err)
	}
	cv := reflect.ValueOf(c).Elem()
	pvv := reflect.ValueOf(&p).Elem()
	for _, k := range keys {
		cur, proj := fieldByKey(cv, k), fieldByKey(pvv, k)
		if !cur.IsValid() || !proj.IsValid() {
			return fmt.Errorf("%w: %s: key %s", ErrInvalid, file, k)
		}
		switch projectKeys[k] {
		case tightenAppend:
			merged := reflect.AppendSlice(reflect.MakeSlice(cur.Type(), 0, cur.Len()+proj.Len()), cur)
			for i := 0; i < proj.Len(); i++ {
				e := proj.Index(i)
				if !containsValue(merged, e) {
					merged = reflect.Append(merged, e)
				}
			}
			cur.Set(merged)
		case tightenLower:
			cf, pf := number(cur), number(proj)
			if cf == 0 {
				// 0 means "auto" for these: compare with what auto gives.
				switch k {
				case "sandbox.memory_mb":
					cf = float64(c.Sandbox.EffectiveMemoryMB())
				case "sandbox.cpus":
					cf = c.Sandbox.EffectiveCPUs()
				}
			}
			if pf <= 0 || (cf > 0 && pf > cf) {
				return fmt.Errorf("%w: %s: %s = %v would loosen the current %v (from %s); a project config may only lower limits", ErrInvalid, file, k, proj.Interface(), cur.Interface(), c.source(k))
			}
			cur.Set(proj)
		case tightenMode:
			if modeStrictness(proj.String()) < 0 {
				return fmt.Errorf("%w: %s: tools.mode %q: want one of %s", ErrInvalid, file, proj.String(), strings.Join(toolModes, ", "))
			}
			if modeStrictness(proj.String()) < modeStrictness(cur.String()) {
				return fmt.Errorf("%w: %s: tools.mode %q is looser than %q (from %s); a project config may only pick a stricter mode", ErrInvalid, file, proj.String(), cur.String(), c.source(k))
			}
			cur.Set(proj)
		case tightenSubset:
			for i := 0; i < proj.Len(); i++ {
				if !containsValue(cur, proj.Index(i)) {
					return fmt.Errorf("%w: %s: %s entry %v is not in the current list (from %s); a project config may only remove entries", ErrInvalid, file, k, proj.Index(i).Interface(), c.source(k))
				}
			}
			cur.Set(proj)
		case tightenNetMode:
			if networkModeStrictness(proj.String()) < 0 {
				return fmt.Errorf("%w: %s: network.mode %q: want none or allowlist", ErrInvalid, file, proj.String())
			}
			if networkModeStrictness(proj.String()) < networkModeStrictness(cur.String()) {
				return fmt.Errorf("%w: %s: network.mode %q is looser than %q (from %s); a project config may only turn the network off", ErrInvalid, file, proj.String(), cur.String(), c.source(k))
			}
			cur.Set(proj)
		case tightenFalse:
			if proj.Bool() && !cur.Bool() {
				return fmt.Errorf("%w: %s: %s = true would loosen the configuration", ErrInvalid, file, k)
			}
			cur.Set(proj)
		}
		if c.Sources == nil {
			c.Sources = map[string]string{}
		}
		if prev, ok := c.Sources[k]; ok && projectKeys[k] == tightenAppend {
			c.Sources[k] = prev + " + project " + file
		} else if projectKeys[k] == tightenAppend {
			c.Sources[k] = "default + project " + file
		} else {
			c.Sources[k] = "project " + file
		}
	}
	return nil
}

func (c *Config) source(k string) string {
	if s, ok := c.Sources[k]; ok {
		return s
	}
	return "default"
}

// Source says where key's value came from.
func (c *Config) Source(key string) string { return c.source(key) }

// SourceFile is the user config file (the default one or --config) that
// key's value came from, or "" when it came from elsewhere (defaults,
// environment, flags; a project file sets no secret). A caller that
// keeps a secret from key checks who can read that file.
func (c *Config) SourceFile(key string) string {
	f, ok := strings.CutPrefix(c.source(key), userFileSource)
	if !ok {
		return ""
	}
	return f
}

func fieldByKey(v reflect.Value, key string) reflect.Value {
	for _, part := range strings.Split(key, ".") {
		if v.Kind() != reflect.Struct {
			return reflect.Value{}
		}
		t := v.Type()
		found := false
		for i := 0; i < t.NumField(); i++ {
			if t.Field(i).Tag.Get("mapstructure") == part {
				v = v.Field(i)
				found = true
				break
			}
		}
		if !found {
			return reflect.Value{}
		}
	}
	return v
}

func containsValue(list, e reflect.Value) bool {
	for i := 0; i < list.Len(); i++ {
		if reflect.DeepEqual(list.Index(i).Interface(), e.Interface()) {
			return true
		}
	}
	return false
}

func number(v reflect.Value) float64 {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(v.Uint())
	case reflect.Float32, reflect.Float64:
		return v.Float()
	}
	return 0
}
