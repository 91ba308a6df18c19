package snapshot

import (
	"context"
	"sort"
)

// Plan is what an undo or a rollback would do, worked out without
// changing anything (a dry run).
type Plan struct {
	Kind Kind `json:"kind"`
	// Target is the entry an undo would revert, or the entry a rollback
	// would restore the workspace to (just before it).
	Target string `json:"target"`
	// Changes are what applying the plan would change, sorted by path:
	// Old is the path now, New the state it would be restored to.
	Changes []Change `json:"changes"`
	// Conflicts are what would stop an undo (without --force), and for
	// both kinds what applying would overwrite: changes made since by a
	// later call or outside any journaled call.
	Conflicts []Conflict `json:"conflicts"`
	// Blocked, when not empty, says why applying would fail before
	// touching anything (a pre-image that cannot be restored).
	Blocked string `json:"blocked,omitempty"`
}

// PlanUndo is Undo's dry run: what Undo(id) would restore and the
// conflicts it would report, with the workspace and the journal left as
// they are.
func (s *Store) PlanUndo(ctx context.Context, id string) (Plan, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return Plan{}, err
	}
	defer unlock()
	target, plan, conflicts, err := s.planUndo(ctx, id, "")
	if err != nil {
		return Plan{}, err
	}
	return s.newPlan(KindUndo, target.ID, plan, conflicts), nil
}

// PlanRollback is Rollback's dry run: what Rollback(toID) would restore,
// with the workspace and the journal left as they are. Its conflicts are
// the paths whose current state is not what the journal last recorded
// for them (changed outside any journaled call): the rollback would
// overwrite those changes, which no entry holds.
func (s *Store) PlanRollback(ctx context.Context, toID string) (Plan, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return Plan{}, err
	}
	defer unlock()
	to, plan, err := s.planRollback(ctx, toID)
	if err != nil {
		return Plan{}, err
	}
	since, err := s.entriesAfter(ctx, to.ID)
	if err != nil {
		return Plan{}, err
	}
	since = append([]Entry{to}, since...)
	last := map[string]*Node{}
	lastBy := map[string]string{}
	for _, e := range since {
		for _, ch := range e.Changes {
			last[ch.Path], lastBy[ch.Path] = ch.New, e.ID
		}
	}
	var conflicts []Conflict
	for _, d := range plan {
		p := string(d.Path)
		if want, ok := last[p]; ok && !sameContent(want, fromDiskNode(d.Old)) {
			conflicts = append(conflicts, Conflict{Path: p, Reason: describeDrift(want, fromDiskNode(d.Old)) +
				" outside any journaled call (after call " + lastBy[p] + "); the rollback overwrites that"})
		}
	}
	rootfd, err := s.openRoot()
	if err != nil {
		return Plan{}, err
	}
	defer closeFD(rootfd)
	conflicts = append(conflicts, s.structuralConflicts(rootfd, plan)...)
	return s.newPlan(KindRollback, to.ID, plan, conflicts), nil
}

func (s *Store) newPlan(kind Kind, target string, plan []diskChange, conflicts []Conflict) Plan {
	p := Plan{Kind: kind, Target: target, Changes: []Change{}, Conflicts: conflicts}
	if p.Conflicts == nil {
		p.Conflicts = []Conflict{}
	}
	for _, d := range plan {
		if ch, ok := classify(string(d.Path), fromDiskNode(d.Old), fromDiskNode(d.New)); ok {
			p.Changes = append(p.Changes, ch)
		}
	}
	sortChanges(p.Changes)
	sort.SliceStable(p.Conflicts, func(i, j int) bool { return p.Conflicts[i].Path < p.Conflicts[j].Path })
	if err := s.checkRestorable(planItems(plan)); err != nil {
		p.Blocked = err.Error()
	}
	return p
}
