package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// hookManagerKeys are the package.json keys that hook managers read at
// the moment a git hook runs (husky 4, simple-git-hooks, lint-staged,
// commitlint, yorkie, pre-commit, ghooks …): a change to them changes
// what the owner's next git command runs. They are judged whether or not
// a hook runner is present: each of them is a trigger itself.
var hookManagerKeys = []string{"husky", "simple-git-hooks", "lint-staged", "nano-staged", "commitlint",
	"gitHooks", "pre-commit", "precommit", "pre-push", "prepush", "ghooks", "git-hooks", "lefthook"}

// hookRunKeys are the package.json keys a hook's package-manager command
// runs or reads (`npm test` runs scripts.test and its pre/post scripts
// with npm_package_config_* from config; corepack fetches and runs the
// packageManager named): judged while a hook runner is present.
var hookRunKeys = []string{"scripts", "config", "packageManager"}

// judgePackageJSON judges a change of one package.json from old to new
// (nil: absent) as JSON: protected when a hook-manager key changed or,
// with runner set (a git hook or hook manager is present), when one of
// the keys a hook's package-manager command runs changed (scripts,
// config, packageManager). A change to anything else — dependencies,
// version, files, engines — is not. Content that is not a JSON object
// fails closed (a package manager may read it differently).
func judgePackageJSON(old, new []byte, runner bool) (string, bool) {
	if new == nil {
		return "", false // removed: what it ran is gone with it
	}
	nv, err := jsonObject(new)
	if err != nil {
		return fmt.Sprintf("its new content is not a JSON object agentbox can judge (%v), and a hook may run what it says", err), true
	}
	ov, oerr := jsonObject(old)
	if old == nil || oerr != nil {
		ov = map[string]any{}
	}
	keys := append([]string(nil), hookManagerKeys...)
	if runner {
		keys = append(keys, hookRunKeys...)
	}
	var changed []string
	for _, k := range keys {
		o, oin := ov[k]
		n, nin := nv[k]
		if oin != nin || !reflect.DeepEqual(o, n) {
			changed = append(changed, k)
		}
	}
	if len(changed) == 0 {
		return "", false
	}
	sort.Strings(changed)
	if oerr != nil && old != nil {
		return fmt.Sprintf("its old content could not be judged, and the new one sets %s, which git hooks run", strings.Join(changed, ", ")), true
	}
	return fmt.Sprintf("the change touches %s, which git hooks run", strings.Join(changed, ", ")), true
}

// jsonObject decodes data as one JSON object; a byte-order mark, trailing
// data or another top-level type is an error.
func jsonObject(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("not an object")
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the object")
	}
	return m, nil
}

// npmHooks finds the hook runners package.json itself names (husky 4,
// simple-git-hooks, lint-staged, …) and the configs they read, so that a
// present runner makes the hook-run keys judged.
func (b *closureBuilder) npmHooks() {
	data, err := b.read("package.json")
	switch {
	case err == nil:
		m, jerr := jsonObject(data)
		if jerr != nil {
			b.failClosed("package.json could not be parsed (%v): its scripts are judged as if a hook ran them", jerr)
			if b.c.hooks == "" {
				b.c.hooks = "package.json could not be parsed, so a hook runner it names cannot be ruled out"
			}
			return
		}
		for _, k := range hookManagerKeys {
			if _, ok := m[k]; ok && b.c.hooks == "" {
				b.c.hooks = fmt.Sprintf("package.json configures the hook manager %q", k)
			}
		}
	case !isNotExist(err):
		b.failClosed("package.json could not be read (%v): its scripts are judged as if a hook ran them", err)
		if b.c.hooks == "" {
			b.c.hooks = "package.json could not be read"
		}
	}
}
