package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/agentbox/agentbox/snapshot"
	"github.com/agentbox/agentbox/tools/termtext"
)

// statGroup is one line of a collapsed change list: a single path, or a
// directory standing for every changed path beneath it (and itself).
type statGroup struct {
	Path  string
	Dir   bool // Path stands for paths beneath it
	Count int
	Ops   map[snapshot.Op]int
}

// groupChanges collapses changes into at most max lines: each path when
// they fit, else grouped by their leading directories, as deep as still
// fits (one command that created 2000 files under node_modules/ is one
// line). When even the top level does not fit, the largest groups are
// kept and the rest folded into a final line with an empty Path.
func groupChanges(changes []snapshot.Change, max int) []statGroup {
	if max < 2 {
		max = 2
	}
	if len(changes) <= max {
		out := make([]statGroup, len(changes))
		for i, c := range changes {
			out[i] = statGroup{Path: c.Path, Count: 1, Ops: map[snapshot.Op]int{c.Op: 1}}
		}
		return out
	}
	groupAt := func(depth int) []statGroup {
		byKey := map[string]*statGroup{}
		var keys []string
		for _, c := range changes {
			parts := strings.Split(c.Path, "/")
			key := strings.Join(parts[:min(depth, len(parts))], "/")
			g := byKey[key]
			if g == nil {
				g = &statGroup{Path: key, Ops: map[snapshot.Op]int{}}
				byKey[key] = g
				keys = append(keys, key)
			}
			g.Count++
			g.Ops[c.Op]++
			if len(parts) > depth {
				g.Dir = true
			}
		}
		sort.Strings(keys)
		out := make([]statGroup, len(keys))
		for i, k := range keys {
			out[i] = *byKey[k]
		}
		return out
	}
	best := groupAt(1)
	for depth := 2; anyDir(best); depth++ {
		g := groupAt(depth)
		if len(g) > max {
			break
		}
		best = g
	}
	if len(best) <= max {
		return best
	}
	// Keep the largest groups, in path order, and fold the rest.
	idx := make([]int, len(best))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return best[idx[a]].Count > best[idx[b]].Count })
	keep := map[int]bool{}
	for _, i := range idx[:max-1] {
		keep[i] = true
	}
	var out []statGroup
	rest := statGroup{Ops: map[snapshot.Op]int{}}
	for i, g := range best {
		if keep[i] {
			out = append(out, g)
			continue
		}
		rest.Count += g.Count
		for op, n := range g.Ops {
			rest.Ops[op] += n
		}
	}
	return append(out, rest)
}

func anyDir(gs []statGroup) bool {
	for _, g := range gs {
		if g.Dir {
			return true
		}
	}
	return false
}

// opOrder is the order op counts are printed in.
var opOrder = []snapshot.Op{snapshot.OpAdded, snapshot.OpModified, snapshot.OpDeleted, snapshot.OpTypeChanged, snapshot.OpModeChanged}

// opCounts says "3 added, 1 deleted".
func opCounts(ops map[snapshot.Op]int) string {
	var parts []string
	for _, op := range opOrder {
		if n := ops[op]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, strings.ReplaceAll(string(op), "_", " ")))
		}
	}
	return strings.Join(parts, ", ")
}

// printGroups writes a collapsed change list, indented.
func printGroups(w io.Writer, gs []statGroup) {
	for _, g := range gs {
		letter := "*"
		if len(g.Ops) == 1 {
			for op := range g.Ops {
				letter = opLetters[op]
			}
		}
		switch {
		case g.Path == "":
			fmt.Fprintf(w, "    %s … %d more path(s) elsewhere (%s)\n", letter, g.Count, opCounts(g.Ops))
		case g.Dir:
			fmt.Fprintf(w, "    %s %s/ (%d paths: %s)\n", letter, termtext.Line(g.Path), g.Count, opCounts(g.Ops))
		default:
			fmt.Fprintf(w, "    %s %s\n", letter, termtext.Line(g.Path))
		}
	}
}

// Lines of changes history prints per entry: all of them up to
// historyMaxLines, else grouped; --stat groups to statMaxLines and adds
// the totals.
const (
	historyMaxLines = 20
	statMaxLines    = 8
)

// printChanges writes an entry's changes for history.
func printChanges(w io.Writer, changes []snapshot.Change, stat bool) {
	if !stat {
		printGroups(w, groupChanges(changes, historyMaxLines))
		return
	}
	if len(changes) == 0 {
		return
	}
	ops := map[snapshot.Op]int{}
	for _, c := range changes {
		ops[c.Op]++
	}
	fmt.Fprintf(w, "    %d path(s): %s\n", len(changes), opCounts(ops))
	printGroups(w, groupChanges(changes, statMaxLines))
}
