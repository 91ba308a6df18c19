package tools

import (
	"context"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentbox/agentbox/tools/permission"
)

// Kind says what a tool does, for permission rules (Edit(...) rules apply to
// every edit tool), plan mode and front ends.
type Kind string

const (
	KindRead    Kind = "read"
	KindEdit    Kind = "edit"
	KindDelete  Kind = "delete"
	KindMove    Kind = "move"
	KindSearch  Kind = "search"
	KindExecute Kind = "execute"
	KindFetch   Kind = "fetch"
	KindOther   Kind = "other"
)

// Description is the layered text the model sees. Render joins it into one
// text; Summary alone is used where a front end wants one line.
type Description struct {
	Summary  string   // one line, no trailing newline
	Long     string   // paragraphs
	Usage    string   // usage notes, one per line
	Examples []string // short examples
	Rules    []string // important rules the model must follow
}

// Render is the full model-facing description.
func (d Description) Render() string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(d.Summary))
	if s := strings.TrimSpace(d.Long); s != "" {
		b.WriteString("\n\n" + s)
	}
	if s := strings.TrimSpace(d.Usage); s != "" {
		b.WriteString("\n\nUsage:\n")
		for _, line := range strings.Split(s, "\n") {
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			if !strings.HasPrefix(line, "- ") {
				line = "- " + line
			}
			b.WriteString(line + "\n")
		}
	}
	if len(d.Rules) > 0 {
		b.WriteString("\nImportant:\n")
		for _, r := range d.Rules {
			b.WriteString("- " + strings.TrimSpace(r) + "\n")
		}
	}
	if len(d.Examples) > 0 {
		b.WriteString("\nExamples:\n")
		for _, e := range d.Examples {
			b.WriteString("- " + strings.TrimSpace(e) + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// Tool is one tool the model can call. Implementations must be safe for
// concurrent use: the pipeline runs concurrency-safe calls in parallel.
//
// params is always the value NewParams returned, after decoding, backfill
// and validation (a pointer to the tool's params struct for tools made by
// [New]).
type Tool interface {
	Name() string
	Aliases() []string
	Description() Description
	Kind() Kind
	// Schema is the JSON Schema of the input object, generated from the
	// params struct (never written by hand).
	Schema() *jsonschema.Schema
	// NewParams returns a fresh pointer to decode a call's input into.
	NewParams() any
	ReadOnly(params any) bool
	ConcurrencySafe(params any) bool
	Destructive(params any) bool
	Run(ctx context.Context, env *Env, params any) (Result, error)
}

// ScopeKind is what the pipeline snapshots before a mutating call.
type ScopeKind int

const (
	// ScopeNone: nothing (read-only calls).
	ScopeNone ScopeKind = iota
	// ScopeFiles: pre-images of the listed files only (Write, Edit, ...).
	ScopeFiles
	// ScopeWorkspace: scan the whole workspace before and after (Bash).
	ScopeWorkspace
)

func (k ScopeKind) String() string {
	switch k {
	case ScopeNone:
		return "none"
	case ScopeFiles:
		return "files"
	case ScopeWorkspace:
		return "workspace"
	}
	return "unknown"
}

// Scope is what a call can touch, for the snapshot stage.
type Scope struct {
	Kind  ScopeKind
	Paths []string // absolute, for ScopeFiles
	// Detached (with ScopeWorkspace): the call starts a background job;
	// its changes are captured when the job ends (see DetachedSnapshot),
	// if the store and the Jobs implementation support it.
	Detached bool
}

// Scoper is implemented by tools that say what a call can change. Tools
// without it get: read-only → [ScopeNone]; path fields and kind edit, delete
// or move → [ScopeFiles] of those paths; anything else → [ScopeWorkspace]
// (unknown → the widest snapshot).
type Scoper interface {
	Scope(params any) Scope
}

// ReadTracking says how a tool takes part in read-before-write.
type ReadTracking int

const (
	TrackNone ReadTracking = iota
	// TrackRead: a successful call records that the session read its path.
	TrackRead
	// TrackWrite: an existing target file must have been read by this
	// session and be unchanged since, else the call fails with conflict;
	// after success the new content counts as read.
	TrackWrite
)

// ReadTracker is implemented by tools that take part in read-before-write.
type ReadTracker interface {
	ReadTracking() ReadTracking
}

// Verdict is the classifier's judgement of a shell command as the pipeline
// hands it to tools and rules. tools does not import the classifier:
// tools/workspace, the composition root, is the one place that translates
// classifier.Verdict to it.
type Verdict struct {
	Class    string     `json:"class"` // read_only, dangerous, forbidden
	Reasons  []Reason   `json:"reasons,omitempty"`
	Commands [][]string `json:"commands,omitempty"` // normalized argv of each simple command
	Prefix   []string   `json:"prefix,omitempty"`   // argv prefix offered for "always allow"
	// Reads are the words that may name files the command reads, matched
	// against Read path rules (secret files included).
	Reads []permission.Read `json:"-"`
	// Parts are the simple commands of a command the classifier resolved
	// wholly into simple commands (lists, pipelines, chains, subshells),
	// each judged alone; empty when it could not. Rules and grants cover
	// a command part by part, and only a resolved one.
	Parts []Part `json:"parts,omitempty"`
}

// Part is one simple command of a resolved command ([Verdict].Parts).
type Part struct {
	Argv  []string `json:"argv"`
	Class string   `json:"class"`
	// Prefix is the argv prefix an "always allow" of this part would be
	// keyed by (nil: none can be offered).
	Prefix []string `json:"prefix,omitempty"`
}

// Reason explains part of a verdict.
type Reason struct {
	Rule    string `json:"rule"`
	Text    string `json:"text,omitempty"`
	Offset  int    `json:"offset"`
	Message string `json:"message"`
}

// Classes of a verdict.
const (
	ClassReadOnly  = "read_only"
	ClassDangerous = "dangerous"
	ClassForbidden = "forbidden"
)
