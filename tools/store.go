package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/config/atomicfile"
)

// ErrBadSessionID is returned for session ids that are not 1–64 of
// [A-Za-z0-9._-] (they name files).
var ErrBadSessionID = errors.New("bad session id")

// SessionStore persists sessions as JSON files in a directory under the
// workspace's state dir (never inside the workspace). Safe for concurrent
// use within a process; across processes the last save wins.
type SessionStore struct {
	dir       string
	workspace string
	mu        sync.Mutex
}

// NewSessionStore keeps sessions in dir for the given workspace.
func NewSessionStore(dir, workspace string) *SessionStore {
	return &SessionStore{dir: dir, workspace: workspace}
}

type sessionFile struct {
	ID     string               `json:"id"`
	Cwd    string               `json:"cwd"`
	Reads  map[string]ReadStamp `json:"reads,omitempty"`
	Jobs   []string             `json:"jobs,omitempty"`
	Grants []Grant              `json:"grants,omitempty"`
}

// validSessionID checks a session id.
func validSessionID(id string) error {
	if id == "" || len(id) > 64 || id == "." || id == ".." {
		return fmt.Errorf("%w: %q", ErrBadSessionID, id)
	}
	for _, c := range id {
		if !(c == '_' || c == '-' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return fmt.Errorf("%w: %q (use letters, digits, '.', '_' and '-')", ErrBadSessionID, id)
		}
	}
	return nil
}

func (st *SessionStore) path(id string) string { return filepath.Join(st.dir, id+".json") }

// Load returns the saved session id, or a new one whose cwd is the
// workspace. A saved cwd that is no longer a directory inside the
// workspace is reset to the workspace.
func (st *SessionStore) Load(id string) (*Session, error) {
	if err := validSessionID(id); err != nil {
		return nil, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	s := NewSession(id, st.workspace)
	b, err := os.ReadFile(st.path(id))
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", id, err)
	}
	var f sessionFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("session %s: corrupt state file %s: %w", id, st.path(id), err)
	}
	if f.Cwd != "" && filepath.IsAbs(f.Cwd) && config.Within(filepath.Clean(f.Cwd), st.workspace) {
		if fi, err := os.Stat(f.Cwd); err == nil && fi.IsDir() {
			s.cwd = filepath.Clean(f.Cwd)
		}
	}
	for p, r := range f.Reads {
		s.reads[p] = r
	}
	s.jobs = slices.Clone(f.Jobs)
	s.grants = slices.Clone(f.Grants)
	return s, nil
}

// Save writes the session atomically.
func (st *SessionStore) Save(s *Session) error {
	if err := validSessionID(s.ID); err != nil {
		return err
	}
	s.mu.Lock()
	f := sessionFile{ID: s.ID, Cwd: s.cwd, Reads: map[string]ReadStamp{}, Jobs: slices.Clone(s.jobs), Grants: slices.Clone(s.grants)}
	for p, r := range s.reads {
		f.Reads[p] = r
	}
	s.mu.Unlock()
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := writeFileAtomic(st.path(s.ID), b, 0o600); err != nil {
		return fmt.Errorf("session %s: %w", s.ID, err)
	}
	return nil
}

// List returns the ids of saved sessions.
func (st *SessionStore) List() ([]string, error) {
	ents, err := os.ReadDir(st.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range ents {
		if n := e.Name(); filepath.Ext(n) == ".json" {
			ids = append(ids, n[:len(n)-len(".json")])
		}
	}
	return ids, nil
}

// GrantFile is a GrantStore kept in one JSON file (project grants, under
// the workspace's state dir). Safe for concurrent use.
type GrantFile struct {
	path string
	mu   sync.Mutex
}

// NewGrantFile uses path.
func NewGrantFile(path string) *GrantFile { return &GrantFile{path: path} }

// List returns the grants; an unreadable file yields none (fail closed:
// no grant means asking again).
func (g *GrantFile) List() []Grant {
	g.mu.Lock()
	defer g.mu.Unlock()
	gs, _ := g.read()
	return gs
}

func (g *GrantFile) read() ([]Grant, error) {
	b, err := os.ReadFile(g.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var gs []Grant
	if err := json.Unmarshal(b, &gs); err != nil {
		return nil, fmt.Errorf("grants %s: %w", g.path, err)
	}
	return gs, nil
}

// Add appends a grant unless an equal one exists.
func (g *GrantFile) Add(n Grant) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	gs, err := g.read()
	if err != nil {
		return err
	}
	for _, old := range gs {
		if old.Tool == n.Tool && slices.Equal(old.Prefix, n.Prefix) {
			return nil
		}
	}
	gs = append(gs, n)
	b, err := json.MarshalIndent(gs, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(g.path, b, 0o600)
}

// Remove drops the grants for which drop returns true and returns them.
func (g *GrantFile) Remove(drop func(Grant) bool) ([]Grant, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gs, err := g.read()
	if err != nil {
		return nil, err
	}
	var kept, gone []Grant
	for _, x := range gs {
		if drop(x) {
			gone = append(gone, x)
		} else {
			kept = append(kept, x)
		}
	}
	if len(gone) == 0 {
		return nil, nil
	}
	if kept == nil {
		kept = []Grant{}
	}
	b, err := json.MarshalIndent(kept, "", "  ")
	if err != nil {
		return nil, err
	}
	return gone, writeFileAtomic(g.path, b, 0o600)
}

// writeFileAtomic writes data to path durably (atomicfile.WriteFile),
// creating the directory (0700) when missing.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, data, perm)
}
