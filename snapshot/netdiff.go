package snapshot

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// Range says which journal entries a combined diff covers.
type Range struct {
	// Since is where the range starts: an entry ID (that call and every
	// entry after it; for a checkpoint, every entry after it, since the
	// checkpoint is the state compared against), or "session:ID" (from
	// the first entry of that session on, whoever made the later ones).
	Since string
	// Session, when set, keeps only the entries of that session.
	Session string
}

// Entries returns the entries of r, oldest first. An empty range (no
// Since, no Session) is the whole journal.
func (s *Store) Entries(ctx context.Context, r Range) ([]Entry, error) {
	all, err := s.List(ctx, 0)
	if err != nil {
		return nil, err
	}
	// all is newest first; walk it oldest first.
	var from uint64
	switch sess, isSession := strings.CutPrefix(r.Since, "session:"); {
	case r.Since == "":
	case isSession:
		if sess == "" {
			return nil, fmt.Errorf("snapshot: session: wants a session ID (session:ID): %w", ErrNotFound)
		}
		for i := len(all) - 1; i >= 0 && from == 0; i-- {
			if all[i].Session == sess {
				from, _ = parseID(all[i].ID)
			}
		}
		if from == 0 {
			return nil, fmt.Errorf("snapshot: no journaled call of session %q: %w", sess, ErrNotFound)
		}
	default:
		e, err := s.Get(ctx, r.Since)
		if err != nil {
			return nil, err
		}
		from, _ = parseID(e.ID)
		if e.Kind == KindCheckpoint {
			from++
		}
	}
	var out []Entry
	for i := len(all) - 1; i >= 0; i-- {
		e := all[i]
		if n, _ := parseID(e.ID); n < from {
			continue
		}
		if r.Session != "" && e.Session != r.Session {
			continue
		}
		out = append(out, e)
	}
	if r.Session != "" && len(out) == 0 && r.Since == "" {
		return nil, fmt.Errorf("snapshot: no journaled call of session %q: %w", r.Session, ErrNotFound)
	}
	return out, nil
}

// NetChanges combines the changesets of entries (oldest first) into one
// change per path, from the state before the first entry that changed it
// (its Old) to the state after the last one (its New). Paths that ended
// where they began are left out. The result is sorted by path.
func NetChanges(entries []Entry) []Change {
	first := map[string]*Node{}
	last := map[string]*Node{}
	var order []string
	for _, e := range entries {
		for _, ch := range e.Changes {
			if _, seen := first[ch.Path]; !seen {
				first[ch.Path] = ch.Old
				order = append(order, ch.Path)
			}
			last[ch.Path] = ch.New
		}
	}
	out := []Change{}
	for _, p := range order {
		if ch, ok := classify(p, first[p], last[p]); ok {
			out = append(out, ch)
		}
	}
	sortChanges(out)
	return out
}

// DiffChanges writes changes as one unified diff, like Diff does for one
// entry.
func (s *Store) DiffChanges(ctx context.Context, changes []Change, w io.Writer) error {
	for _, ch := range changes {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.diffChange(w, ch); err != nil {
			return err
		}
	}
	return nil
}
