package tools

import (
	"slices"
	"sync"
	"time"
)

// ReadStamp records what a session saw when it read a file: enough to
// tell later whether the file changed since.
type ReadStamp struct {
	ModTime time.Time `json:"mtime"`
	Size    int64     `json:"size"`
	// Hash is the sha256 of the content (hex), "" for very large files.
	Hash string `json:"hash,omitempty"`
	// Offset and Limit are the line window the Read covered (0 = whole).
	Offset int `json:"offset,omitempty"`
	Limit  int `json:"limit,omitempty"`
	// At is when the read happened.
	At time.Time `json:"at"`
	// Shown is set when Read showed the content to the model in this
	// process. It is never stored, so a stamp loaded from the session store
	// (a one-shot CLI call of an earlier process, which has no
	// conversation) still lets Edit and Write go ahead but never makes
	// Read answer "unchanged" instead of the content.
	Shown bool `json:"-"`
}

// Same reports whether two stamps describe the same file content.
func (r ReadStamp) Same(o ReadStamp) bool {
	if r.Size != o.Size {
		return false
	}
	if r.Hash != "" && o.Hash != "" {
		return r.Hash == o.Hash
	}
	return r.ModTime.Equal(o.ModTime)
}

// Session is one agent's conversation with agentbox: its working
// directory, what it has read, its background jobs and its "always allow"
// grants. Safe for concurrent use. A [SessionStore] persists it.
type Session struct {
	ID string

	mu     sync.Mutex
	cwd    string
	reads  map[string]ReadStamp
	jobs   []string
	grants []Grant
}

// NewSession returns an empty session whose cwd is dir.
func NewSession(id, dir string) *Session {
	return &Session{ID: id, cwd: dir, reads: map[string]ReadStamp{}}
}

// Cwd is the session's working directory (absolute, inside the workspace).
func (s *Session) Cwd() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cwd
}

// SetCwd changes the working directory. Callers (Bash) must pass an
// absolute directory inside the workspace; [Env.SetCwd] checks that.
func (s *Session) SetCwd(dir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cwd != dir {
		s.cwd = dir
	}
}

// LastRead returns what the session saw when it last read path.
func (s *Session) LastRead(path string) (ReadStamp, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.reads[path]
	return r, ok
}

// RecordRead notes that the session has read path as stamp describes.
func (s *Session) RecordRead(path string, stamp ReadStamp) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reads == nil {
		s.reads = map[string]ReadStamp{}
	}
	s.reads[path] = stamp
}

// ForgetRead drops what the session knew about path.
func (s *Session) ForgetRead(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.reads, path)
}

// AddJob remembers a background job id.
func (s *Session) AddJob(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.jobs, id) {
		s.jobs = append(s.jobs, id)
	}
}

// RemoveJob forgets a background job id.
func (s *Session) RemoveJob(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.jobs, id); i >= 0 {
		s.jobs = slices.Delete(s.jobs, i, i+1)
	}
}

// Jobs lists the session's background job ids.
func (s *Session) Jobs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.jobs)
}

// HasJob reports whether id is one of the session's jobs.
func (s *Session) HasJob(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.jobs, id)
}

// Grants lists the session-scoped "always allow" grants.
func (s *Session) Grants() []Grant {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.grants)
}

// AddGrant adds a session-scoped grant.
func (s *Session) AddGrant(g Grant) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, old := range s.grants {
		if old.Tool == g.Tool && slices.Equal(old.Prefix, g.Prefix) {
			return
		}
	}
	s.grants = append(s.grants, g)
}

// RemoveGrants drops the session grants for which drop returns true and
// returns them.
func (s *Session) RemoveGrants(drop func(Grant) bool) []Grant {
	s.mu.Lock()
	defer s.mu.Unlock()
	var kept, gone []Grant
	for _, g := range s.grants {
		if drop(g) {
			gone = append(gone, g)
		} else {
			kept = append(kept, g)
		}
	}
	s.grants = kept
	return gone
}
