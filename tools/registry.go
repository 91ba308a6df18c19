package tools

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/agentbox/agentbox/tools/permission"
)

// Source says where a tool came from; List orders by it.
type Source int

const (
	SourceBuiltin    Source = iota // compiled into agentbox
	SourceDiscovered               // from a configured discovery command
	SourceMCP                      // from an MCP server
)

func (s Source) String() string {
	switch s {
	case SourceBuiltin:
		return "builtin"
	case SourceDiscovered:
		return "discovered"
	case SourceMCP:
		return "mcp"
	}
	return "unknown"
}

// Sentinel errors of the registry.
var (
	// ErrNameConflict: a name or alias is already taken.
	ErrNameConflict = errors.New("tool name conflict")
)

// Registry holds the tools agents can call. Safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex
	seq     int
	entries map[string]*entry // by canonical name
	names   map[string]*entry // by name and alias
}

type entry struct {
	tool Tool
	src  Source
	seq  int
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{entries: map[string]*entry{}, names: map[string]*entry{}}
}

// Register adds t. Its name and aliases must be valid (letters, digits,
// '_' and '-', 1–64 long, as every model API accepts) and not taken by
// another tool's name or alias.
func (r *Registry) Register(src Source, t Tool) error {
	names := append([]string{t.Name()}, t.Aliases()...)
	for _, n := range names {
		if !validToolName(n) {
			return fmt.Errorf("register %q: invalid tool name %q", t.Name(), n)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range names {
		if other, ok := r.names[n]; ok {
			return fmt.Errorf("register %q: %w: %q is taken by %s tool %q", t.Name(), ErrNameConflict, n, other.src, other.tool.Name())
		}
	}
	if slicesHasDup(names) {
		return fmt.Errorf("register %q: %w: duplicate alias", t.Name(), ErrNameConflict)
	}
	r.seq++
	e := &entry{tool: t, src: src, seq: r.seq}
	r.entries[t.Name()] = e
	for _, n := range names {
		r.names[n] = e
	}
	return nil
}

func slicesHasDup(s []string) bool {
	seen := map[string]bool{}
	for _, x := range s {
		if seen[x] {
			return true
		}
		seen[x] = true
	}
	return false
}

func validToolName(n string) bool {
	if n == "" || len(n) > 64 {
		return false
	}
	for _, c := range n {
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Unregister removes the tool with that canonical name; it reports
// whether there was one.
func (r *Registry) Unregister(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[name]
	if !ok {
		return false
	}
	delete(r.entries, name)
	for n, x := range r.names {
		if x == e {
			delete(r.names, n)
		}
	}
	return true
}

// Lookup finds a tool by name or alias.
func (r *Registry) Lookup(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.names[name]
	if !ok {
		return nil, false
	}
	return e.tool, true
}

// SourceOf says where the named tool came from.
func (r *Registry) SourceOf(name string) (Source, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.names[name]
	if !ok {
		return 0, false
	}
	return e.src, true
}

// List returns every tool: built-in, then discovered, then MCP, each in
// registration order.
func (r *Registry) List() []Tool {
	r.mu.RLock()
	es := make([]*entry, 0, len(r.entries))
	for _, e := range r.entries {
		es = append(es, e)
	}
	r.mu.RUnlock()
	slices.SortFunc(es, func(a, b *entry) int {
		if a.src != b.src {
			return int(a.src) - int(b.src)
		}
		return a.seq - b.seq
	})
	out := make([]Tool, len(es))
	for i, e := range es {
		out[i] = e.tool
	}
	return out
}

// Filter returns, in List order, the tools keep accepts.
func (r *Registry) Filter(keep func(Tool) bool) []Tool {
	var out []Tool
	for _, t := range r.List() {
		if keep(t) {
			out = append(out, t)
		}
	}
	return out
}

// ByKind lists the tools of one kind.
func (r *Registry) ByKind(k Kind) []Tool {
	return r.Filter(func(t Tool) bool { return t.Kind() == k })
}

// PlanMode keeps the tools usable in plan mode: those read-only for any
// input, and those whose calls are judged one by one (a command field:
// Bash runs in plan mode only when its command is proven read-only).
func PlanMode(t Tool) bool {
	p := t.NewParams()
	if _, ok := commandOf(p); ok {
		return true
	}
	return t.ReadOnly(p)
}

// NotDenied keeps the tools that deny rules do not refuse entirely.
func NotDenied(rs permission.Rules) func(Tool) bool {
	return func(t Tool) bool { return !rs.DeniesWholly(t.Name(), t.Aliases(), string(t.Kind())) }
}
