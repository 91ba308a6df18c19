package snapshot_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/snapshot"
)

var concurrentSeeds = flag.Int("snapshot.concurrent-seeds", 0, "seeds of TestConcurrentAttribution (0: 4, 2 with -short)")

// The paths the actors of TestConcurrentAttribution touch ("d" always
// exists and is never touched).
var concPaths = []string{"a", "b", "c", "d/x", "d/y"}

// concModel is what the actors actually did, in the order they did it.
// Every write to the workspace is made under mu and recorded; the store's
// call hooks take mu around the file-scoped calls' stats and copy the
// state at the quiescent points of the whole-workspace calls' scans, so
// each entry can be checked against the exact states its call saw.
type concModel struct {
	mu     sync.Mutex
	ws     string
	state  map[string]string // path → content (absent: no key)
	writer map[string]int    // path → the call whose write made its state (0: initial)
	seq    int               // writes so far
	wseq   map[string]int    // path → seq of the write that made its state
	snaps  map[string]concSnap
	byHash map[string]string // every content written, by SHA-256
	// produced lists, per call and path, the states its writes left.
	produced map[int]map[string][]want
}

type concSnap struct {
	state  map[string]string
	writer map[string]int
	wseq   map[string]int
	seq    int
}

func (m *concModel) snap() concSnap {
	return concSnap{state: cloneMap(m.state), writer: cloneMap(m.writer), wseq: cloneMap(m.wseq), seq: m.seq}
}

func cloneMap[V any](in map[string]V) map[string]V {
	out := make(map[string]V, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

// hook is the store's call hook.
func (m *concModel) hook(point, id string) {
	switch point {
	case "file-pre", "file-post":
		m.mu.Lock() // no write between the call's stats
	case "file-pre-done", "file-post-done":
		m.snaps[point+" "+id] = m.snap()
		m.mu.Unlock()
	case "detached-begun", "detached-scanned":
		// Under the store lock and the shell lock: nobody writes.
		m.mu.Lock()
		m.snaps[point+" "+id] = m.snap()
		m.mu.Unlock()
	}
}

// write makes one change on behalf of call: new content, or a deletion
// when content is "".
func (m *concModel) write(t *testing.T, call int, rel, content string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writeLocked(t, call, rel, content)
}

func (m *concModel) writeLocked(t *testing.T, call int, rel, content string) {
	full := filepath.Join(m.ws, rel)
	m.seq++
	if m.produced[call] == nil {
		m.produced[call] = map[string][]want{}
	}
	m.produced[call][rel] = append(m.produced[call][rel], want{content, content != ""})
	if _, ok := m.state[rel]; !ok && content == "" {
		return // deleting what is not there changes nothing
	}
	if content == "" {
		if err := os.Remove(full); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Error(err)
		}
		delete(m.state, rel)
	} else {
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Error(err)
		}
		m.state[rel] = content
		m.byHash[hashOf(content)] = content
	}
	m.writer[rel], m.wseq[rel] = call, m.seq
}

// concCall is one call an actor made.
type concCall struct {
	n        int    // its number (writers are named by it)
	shell    bool   // whole scope; else file scope on path
	path     string // file scope
	reserved string // Call.ID() after Begin
	entry    snapshot.Entry
}

// TestConcurrentAttribution is the property test of concurrent calls:
// shell commands (whole-workspace calls, which hold no store lock while
// they run) and file-scoped calls (Write, Edit) in random interleavings on
// a few shared paths, with real goroutines and real files. Every journal
// entry is checked against what the actors did (a file call's entry is
// its path from the state its Begin saw to the state its Finish saw; a
// shell call's entry is its post-scan diff, except that for a path an
// entry journaled while it ran also changed, only the change after that
// entry's new state, and the path is listed as overlapped when the command
// changed it before or between such entries; every change a shell entry
// holds is a state that command left; a file call's new state is its own
// write unless a shell command wrote the path between its Begin and
// Finish, the documented window), every path's chain of entries against
// the Overlapped lists, and the undo of every entry (on a copy of
// workspace and store) against the tree it must give.
func TestConcurrentAttribution(t *testing.T) {
	seeds := *concurrentSeeds
	if seeds == 0 {
		// Each seed is a few hundred fsyncs (seconds on a disk): run
		// many with TMPDIR on a tmpfs, e.g. TMPDIR=/dev/shm go test
		// -run TestConcurrentAttribution ./snapshot/ -args
		// -snapshot.concurrent-seeds=500
		seeds = 4
		if testing.Short() {
			seeds = 2
		}
	}
	for seed := 1; seed <= seeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { concurrentRun(t, uint64(seed), false) })
	}
	// The same interleavings with fanotify change capture (root only: CI
	// runs as root), every incremental scan checked against a full one.
	if os.Geteuid() == 0 {
		for seed := 1; seed <= seeds; seed++ {
			t.Run(fmt.Sprintf("watch-%d", seed), func(t *testing.T) { concurrentRun(t, uint64(seed), true) })
		}
	}
}

func concurrentRun(t *testing.T, seed uint64, watch bool) {
	ctx := context.Background()
	ws, state := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := &concModel{ws: ws, state: map[string]string{}, writer: map[string]int{}, wseq: map[string]int{}, snaps: map[string]concSnap{}, byHash: map[string]string{}, produced: map[int]map[string][]want{}}
	r := rand.New(rand.NewPCG(seed, 7))
	for _, p := range concPaths {
		if r.IntN(3) > 0 {
			m.write(t, 0, p, "initial "+p)
		}
	}
	initial := cloneMap(m.state)
	opts := []snapshot.Option{snapshot.WithCallHook(m.hook), snapshot.WithWorkers(2)}
	if watch {
		// A mismatch is logged with its paths (to stderr: the store may
		// log after the test ends).
		log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("test", t.Name())
		opts = append(opts, snapshot.WithChangeCapture(snapshot.CaptureAuto), snapshot.WithCaptureCheck(1, 0), snapshot.WithLogger(log))
	}
	st, err := snapshot.Open(ctx, state, ws, opts...)
	if err != nil {
		t.Fatal(err)
	}
	// Closed: each open watcher holds a fanotify group (128 per user).
	defer st.Close()
	if watch {
		if cs := st.CaptureStats(); cs.Mode != "watch" {
			t.Fatalf("the watcher did not start: %s", cs.Reason)
		}
		defer func() {
			cs := st.CaptureStats()
			if cs.Incremental == 0 || cs.Mismatches != 0 {
				t.Errorf("change capture: %d incremental scans, %d checks, %d mismatches (want >0 incremental, 0 mismatches)", cs.Incremental, cs.Checks, cs.Mismatches)
			}
		}()
	}
	if _, err := st.Checkpoint(ctx, "baseline", snapshot.CallInfo{}); err != nil {
		t.Fatal(err)
	}

	var (
		callsMu sync.Mutex
		calls   []*concCall
		nextN   = 1
	)
	newCall := func(shell bool, path string) *concCall {
		callsMu.Lock()
		defer callsMu.Unlock()
		c := &concCall{n: nextN, shell: shell, path: path}
		nextN++
		calls = append(calls, c)
		return c
	}
	pause := func(r *rand.Rand) {
		if r.IntN(2) == 0 {
			time.Sleep(time.Duration(r.IntN(1500)) * time.Microsecond)
		}
	}
	content := func(c *concCall, k int) string {
		return fmt.Sprintf("call %d write %d", c.n, k)
	}
	shellActor := func(r *rand.Rand) {
		for range 2 + r.IntN(3) {
			c := newCall(true, "")
			call, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash", Summary: fmt.Sprint(c.n)}, snapshot.Whole())
			if err != nil {
				t.Error(err)
				return
			}
			c.reserved = call.ID()
			for k := range 1 + r.IntN(4) {
				pause(r)
				p := concPaths[r.IntN(len(concPaths))]
				if r.IntN(4) == 0 {
					m.write(t, c.n, p, "")
				} else {
					m.write(t, c.n, p, content(c, k))
				}
			}
			pause(r)
			if c.entry, err = call.Finish(ctx); err != nil {
				t.Error(err)
				return
			}
			if call.ID() != c.entry.ID {
				t.Errorf("call %d: ID() %s after Finish, entry %s", c.n, call.ID(), c.entry.ID)
			}
		}
	}
	fileActor := func(r *rand.Rand) {
		for range 3 + r.IntN(5) {
			pause(r)
			p := concPaths[r.IntN(len(concPaths))]
			c := newCall(false, p)
			call, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Write", Summary: fmt.Sprint(c.n)}, snapshot.File(p))
			if err != nil {
				t.Error(err)
				return
			}
			c.reserved = call.ID()
			pause(r)
			m.mu.Lock()
			if r.IntN(4) == 0 {
				m.writeLocked(t, c.n, p, "")
			} else {
				m.writeLocked(t, c.n, p, content(c, 0))
			}
			m.mu.Unlock()
			pause(r)
			if c.entry, err = call.Finish(ctx); err != nil {
				t.Error(err)
				return
			}
			if c.entry.ID != c.reserved {
				t.Errorf("file call %d: entry %s, reserved %s", c.n, c.entry.ID, c.reserved)
			}
		}
	}
	var wg sync.WaitGroup
	for i := range 2 + r.IntN(2) {
		rr := rand.New(rand.NewPCG(seed, uint64(100+i)))
		wg.Go(func() { shellActor(rr) })
	}
	for i := range 2 + r.IntN(3) {
		rr := rand.New(rand.NewPCG(seed, uint64(200+i)))
		wg.Go(func() { fileActor(rr) })
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	final := cloneMap(m.state)
	if got := readTree(t, ws); !maps(got, final) {
		t.Fatalf("tree %v, model %v", got, final)
	}
	defer func() {
		if !t.Failed() && os.Getenv("CONC_DUMP") == "" {
			return
		}
		for _, c := range calls {
			t.Logf("call %d shell=%v path=%s reserved=%s entry=%s overlapped=%v", c.n, c.shell, c.path, c.reserved, c.entry.ID, c.entry.Overlapped)
			for _, ch := range c.entry.Changes {
				t.Logf("    %s %s → %s", ch.Path, describe(ch.Old), describe(ch.New))
			}
		}
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range m.snaps {
				if !yield(k) {
					return
				}
			}
		})
		for _, k := range keys {
			v := m.snaps[k]
			t.Logf("snap %s seq %d: %v", k, v.seq, v.writer)
		}
	}()
	concCheckEntries(t, m, calls)
	all, err := st.List(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(all) // oldest first
	concCheckChains(t, all, initial)
	if t.Failed() {
		return
	}
	concCheckUndos(t, ws, state, all, final, m.byHash)
}

// nodeContent is the content a Node stands for ("" = absent).
func nodeContent(n *snapshot.Node, byHash map[string]string) (string, bool) {
	if n == nil {
		return "", true
	}
	c, ok := byHash[n.Hash]
	return c, ok && n.Type == snapshot.TypeFile
}

func hashOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// sameState reports whether n is the state content ("": absent).
func sameState(n *snapshot.Node, content string, present bool) bool {
	if !present {
		return n == nil
	}
	return n != nil && n.Type == snapshot.TypeFile && n.Hash == hashOf(content)
}

func sameNode(a, b *snapshot.Node) bool {
	return a == nil && b == nil || a != nil && b != nil && a.Type == b.Type && a.Hash == b.Hash
}

func describe(n *snapshot.Node) string {
	if n == nil {
		return "absent"
	}
	return string(n.Type) + " " + n.Hash[:min(8, len(n.Hash))]
}

type want struct {
	content string
	present bool
}

func stateOf(m map[string]string, p string) want {
	c, ok := m[p]
	return want{c, ok}
}

func concCheckEntries(t *testing.T, m *concModel, calls []*concCall) {
	byID := map[string]*concCall{}
	for _, c := range calls {
		byID[c.entry.ID] = c
	}
	races := 0
	for _, c := range calls {
		e := c.entry
		if c.shell {
			continue
		}
		pre, ok1 := m.snaps["file-pre-done "+c.reserved]
		post, ok2 := m.snaps["file-post-done "+c.reserved]
		if !ok1 || !ok2 {
			t.Fatalf("file call %d: hooks not seen", c.n)
		}
		// Its entry: exactly its path, from what Begin saw to what
		// Finish saw.
		b, a := stateOf(pre.state, c.path), stateOf(post.state, c.path)
		if b == a {
			if len(e.Changes) != 0 {
				t.Errorf("file call %d (%s): changes %v, want none", c.n, e.ID, e.Changes)
			}
		} else if len(e.Changes) != 1 || e.Changes[0].Path != c.path ||
			!sameState(e.Changes[0].Old, b.content, b.present) || !sameState(e.Changes[0].New, a.content, a.present) {
			t.Errorf("file call %d (%s): changes %+v, want %s %v → %v", c.n, e.ID, e.Changes, c.path, b, a)
		}
		// What Finish saw is its own write, unless a shell command wrote
		// the path between Begin and Finish (the documented window).
		if w := post.writer[c.path]; b != a && w != c.n {
			if ow := callByN(calls, w); ow == nil || !ow.shell || post.wseq[c.path] <= pre.seq {
				t.Errorf("file call %d: its entry holds call %d's write", c.n, w)
			}
			races++
		}
	}
	for _, c := range calls {
		if !c.shell {
			continue
		}
		e := c.entry
		pre, ok1 := m.snaps["detached-begun "+c.reserved]
		post, ok2 := m.snaps["detached-scanned "+c.reserved]
		if !ok1 || !ok2 {
			t.Fatalf("shell call %d: hooks not seen", c.n)
		}
		// Entries journaled while it ran: after its reserved ID, before
		// its own.
		r, _ := snapshot.Resolve(c.reserved)
		type span struct {
			first, last *snapshot.Node
			gap         bool
		}
		taken := map[string]*span{}
		var others []string
		for _, o := range calls {
			if o.entry.ID > r && o.entry.ID < e.ID {
				others = append(others, o.entry.ID)
			}
		}
		sort.Strings(others)
		for _, id := range others {
			for _, ch := range byID[id].entry.Changes {
				if sp := taken[ch.Path]; sp != nil {
					sp.gap = sp.gap || !sameNode(sp.last, ch.Old)
					sp.last = ch.New
				} else {
					taken[ch.Path] = &span{first: ch.Old, last: ch.New}
				}
			}
		}
		got := map[string]snapshot.Change{}
		for _, ch := range e.Changes {
			got[ch.Path] = ch
		}
		var overlapped []string
		for _, p := range concPaths {
			b, a := stateOf(pre.state, p), stateOf(post.state, p)
			ch, in := got[p]
			if sp := taken[p]; sp != nil {
				if !sameState(sp.first, b.content, b.present) || sp.gap {
					overlapped = append(overlapped, p)
				}
				if sameState(sp.last, a.content, a.present) {
					if in {
						t.Errorf("shell call %d (%s): %s: change %s → %s, but its state is call %d's (entry journaled while it ran)",
							c.n, e.ID, p, describe(ch.Old), describe(ch.New), post.writer[p])
					}
					continue
				}
				if !in || ch.Old == nil != (sp.last == nil) || ch.Old != nil && ch.Old.Hash != sp.last.Hash || !sameState(ch.New, a.content, a.present) {
					t.Errorf("shell call %d (%s): %s: got %+v (in: %v), want %s → %v", c.n, e.ID, p, ch, in, describe(sp.last), a)
				}
			} else if b == a {
				if in {
					t.Errorf("shell call %d (%s): %s: change %+v, want none", c.n, e.ID, p, ch)
				}
				continue
			} else if !in || !sameState(ch.Old, b.content, b.present) || !sameState(ch.New, a.content, a.present) {
				t.Errorf("shell call %d (%s): %s: got %+v (in: %v), want %v → %v", c.n, e.ID, p, ch, in, b, a)
			}
			// Whatever it records is a state its own command left (a
			// file call may have written the path since, in the window
			// its entry takes: then it left that state too).
			if in && post.writer[p] != c.n {
				own := false
				for _, w := range m.produced[c.n][p] {
					own = own || w == a
				}
				if !own {
					t.Errorf("shell call %d (%s): %s: records call %d's write", c.n, e.ID, p, post.writer[p])
				}
			}
		}
		for p := range got {
			if !slices.Contains(concPaths, p) {
				t.Errorf("shell call %d: unexpected path %s", c.n, p)
			}
		}
		if !slices.Equal(overlapped, e.Overlapped) {
			t.Errorf("shell call %d (%s): overlapped %v, want %v", c.n, e.ID, e.Overlapped, overlapped)
		}
	}
	if races > 0 {
		t.Logf("%d file calls saw a shell command's write to their path between Begin and Finish", races)
	}
}

func callByN(calls []*concCall, n int) *concCall {
	for _, c := range calls {
		if c.n == n {
			return c
		}
	}
	return nil
}

// concCheckChains checks that for every path the entries, in journal
// order, hand on its state: each change starts where the previous one on
// that path ended, except where a shell call's earlier change to it was
// left out (the path is in the Overlapped list of a shell entry journaled
// after the change that starts elsewhere).
func concCheckChains(t *testing.T, all []snapshot.Entry, initial map[string]string) {
	last := map[string]*snapshot.Node{}
	known := map[string]bool{}
	for i, e := range all {
		for _, ch := range e.Changes {
			prev, seen := last[ch.Path], known[ch.Path]
			ok := false
			if seen {
				ok = ch.Old == nil && prev == nil || ch.Old != nil && prev != nil && ch.Old.Hash == prev.Hash
			} else {
				w := stateOf(initial, ch.Path)
				ok = sameState(ch.Old, w.content, w.present)
			}
			if !ok {
				explained := false
				for _, later := range all[i+1:] {
					if later.Kind == snapshot.KindCall && slices.Contains(later.Overlapped, ch.Path) {
						explained = true
						break
					}
				}
				if !explained {
					t.Errorf("entry %s: %s starts from %s, but the journal last left it %s and no shell entry lists it as overlapped",
						e.ID, ch.Path, describe(ch.Old), describe(prev))
				}
			}
			last[ch.Path], known[ch.Path] = ch.New, true
		}
	}
}

// concCheckUndos undoes every entry, each on a fresh copy of the final
// workspace and store: an undo either reports a conflict and changes
// nothing, or sets exactly its entry's paths to their old states; it
// conflicts exactly when one of them is no longer in the state the entry
// left it in.
func concCheckUndos(t *testing.T, ws, state string, all []snapshot.Entry, final, byHash map[string]string) {
	ctx := context.Background()
	for _, e := range all {
		if e.Kind != snapshot.KindCall || len(e.Changes) == 0 {
			continue
		}
		ws2, state2 := filepath.Join(t.TempDir(), "ws"), filepath.Join(t.TempDir(), "state")
		for _, cp := range [][2]string{{ws, ws2}, {state, state2}} {
			if out, err := exec.Command("cp", "-a", cp[0], cp[1]).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v: %s", err, out)
			}
		}
		st, err := snapshot.Open(ctx, state2, ws2)
		if err != nil {
			t.Fatal(err)
		}
		conflict := false
		wantTree := cloneMap(final)
		for _, ch := range e.Changes {
			w := stateOf(final, ch.Path)
			if !sameState(ch.New, w.content, w.present) {
				conflict = true
			}
			if ch.Old == nil {
				delete(wantTree, ch.Path)
				continue
			}
			c, ok := nodeContent(ch.Old, byHash)
			if !ok {
				t.Fatalf("entry %s: old content of %s unknown", e.ID, ch.Path)
			}
			wantTree[ch.Path] = c
		}
		_, err = st.Undo(ctx, e.ID, false, snapshot.CallInfo{Tool: "undo"})
		got := readTree(t, ws2)
		switch {
		case conflict && !errors.Is(err, snapshot.ErrConflict):
			t.Errorf("undo %s: %v, want a conflict", e.ID, err)
		case conflict:
			if !maps(got, final) {
				t.Errorf("undo %s conflicted but changed the tree: %v, was %v", e.ID, got, final)
			}
		case err != nil:
			t.Errorf("undo %s: %v", e.ID, err)
		case !maps(got, wantTree):
			t.Errorf("undo %s (%s): tree %v, want %v", e.ID, e.Tool, got, wantTree)
		}
		st.Close()
	}
}

func readTree(t *testing.T, ws string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range concPaths {
		data, err := os.ReadFile(filepath.Join(ws, p))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out[p] = string(data)
	}
	return out
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
