package snapshot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// stepClock is a clock the test moves: both scans compared at one step
// see the same time, so their racy-mtime decisions are the same.
type stepClock struct {
	mu    sync.Mutex
	t     time.Time
	ahead time.Duration // added to every set: an hour ahead, nothing is racy
}

func (c *stepClock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *stepClock) set(t time.Time) { c.mu.Lock(); c.t = t.Add(c.ahead); c.mu.Unlock() }

// newWatchedStore opens a store with the fanotify change capture on a new
// temporary workspace. It needs root; it fails (never skips) as root when
// the watcher did not start, so that a test cannot pass without it.
func newWatchedStore(t testing.TB, opts ...Option) (*Store, string, *stepClock) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("fanotify change capture needs root (CAP_SYS_ADMIN)")
	}
	ws := t.TempDir()
	clk := &stepClock{t: time.Now()}
	opts = append([]Option{WithChangeCapture(CaptureAuto), WithCaptureCheck(0, 0), WithClock(clk.now)}, opts...)
	st, err := Open(context.Background(), t.TempDir(), ws, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if cs := st.CaptureStats(); cs.Mode != "watch" {
		t.Fatalf("the watcher did not start: %s", cs.Reason)
	}
	return st, st.Workspace(), clk
}

// mutator applies random changes to a tree: the operations a command can
// make, across directory levels.
type mutator struct {
	t       testing.TB
	ws, out string // workspace; a directory outside it on the same disk
	r       *rand.Rand
	n       int
}

func (m *mutator) all(root string, dirs bool) []string {
	var out []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == root {
			return nil
		}
		if d.IsDir() == dirs {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func (m *mutator) pick(ps []string) string {
	if len(ps) == 0 {
		return ""
	}
	return ps[m.r.IntN(len(ps))]
}

func (m *mutator) dir() string {
	return m.pick(append(m.all(m.ws, true), m.ws, m.ws))
}

func (m *mutator) name() string {
	m.n++
	return fmt.Sprintf("n%d", m.n)
}

// step applies one random operation and says what it did.
func (m *mutator) step() string {
	files := m.all(m.ws, false)
	dirs := m.all(m.ws, true)
	op := m.r.IntN(17)
	do := func(what string, err error) string {
		if err != nil && !os.IsNotExist(err) && !os.IsExist(err) && !errors.Is(err, unix.ELOOP) {
			m.t.Logf("op %s: %v", what, err)
		}
		return what
	}
	switch op {
	case 0, 1: // create a file
		p := filepath.Join(m.dir(), m.name())
		return do("create "+p, os.WriteFile(p, bytes.Repeat([]byte{byte(m.n)}, m.r.IntN(300)), 0o644))
	case 2: // append
		p := m.pick(files)
		if p == "" {
			return "noop"
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|unix.O_NOFOLLOW, 0)
		if err == nil {
			f.WriteString("more\n")
			f.Close()
		}
		return do("append "+p, err)
	case 3: // truncate by path (no open: MODIFY only)
		p := m.pick(files)
		if p == "" {
			return "noop"
		}
		return do("truncate "+p, unix.Truncate(p, int64(m.r.IntN(5))))
	case 4: // delete a file
		p := m.pick(files)
		return do("rm "+p, os.Remove(p))
	case 5: // mkdir
		return do("mkdir", os.Mkdir(filepath.Join(m.dir(), m.name()), 0o755))
	case 6: // rm -rf a directory
		p := m.pick(dirs)
		return do("rm -r "+p, os.RemoveAll(p))
	case 7: // rename a file across directories
		p := m.pick(files)
		if p == "" {
			return "noop"
		}
		return do("mv "+p, os.Rename(p, filepath.Join(m.dir(), m.name())))
	case 8: // rename a directory across levels (never into itself)
		p := m.pick(dirs)
		d := m.dir()
		if p == "" || d == p || strings.HasPrefix(d, p+"/") {
			return "noop"
		}
		return do("mv dir "+p+" "+d, os.Rename(p, filepath.Join(d, m.name())))
	case 9: // chmod
		p := m.pick(append(files, dirs...))
		if p == "" {
			return "noop"
		}
		mode := os.FileMode(0o600 + m.r.IntN(0o177))
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
			mode |= 0o700
		} else if err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return "noop"
		}
		return do("chmod "+p, os.Chmod(p, mode))
	case 10: // symlink, and retarget one
		p := filepath.Join(m.dir(), m.name())
		if err := os.Symlink("target-"+m.name(), p); err != nil {
			return do("symlink", err)
		}
		q := filepath.Join(m.dir(), m.name())
		os.Symlink("x", q)
		os.Remove(q)
		return do("symlink "+p, os.Symlink("y"+m.name(), q))
	case 11: // hard link inside, then write through one name
		p := m.pick(files)
		if p == "" {
			return "noop"
		}
		if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
			return "noop"
		}
		q := filepath.Join(m.dir(), m.name())
		if err := os.Link(p, q); err != nil {
			return do("link", err)
		}
		f, err := os.OpenFile(q, os.O_WRONLY|os.O_APPEND, 0)
		if err == nil {
			f.WriteString("via link\n")
			f.Close()
		}
		return do("link "+p+" "+q, err)
	case 12: // write through a shared mapping (no MODIFY event)
		p := m.pick(files)
		if p == "" {
			return "noop"
		}
		f, err := os.OpenFile(p, os.O_RDWR|unix.O_NOFOLLOW, 0)
		if err != nil {
			return do("mmap", err)
		}
		defer f.Close()
		fi, _ := f.Stat()
		if !fi.Mode().IsRegular() || fi.Size() == 0 {
			return "noop"
		}
		b, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return do("mmap", err)
		}
		f.Close() // the mapping keeps the file open: CLOSE_WRITE at munmap
		b[0] ^= 0xff
		return do("mmap "+p, unix.Munmap(b))
	case 13: // a directory tree made outside and moved in
		src := filepath.Join(m.out, m.name())
		os.MkdirAll(filepath.Join(src, "sub"), 0o755)
		os.WriteFile(filepath.Join(src, "sub", "f"), []byte("outside"), 0o644)
		return do("mv in "+src, os.Rename(src, filepath.Join(m.dir(), m.name())))
	case 14: // a directory moved out
		p := m.pick(dirs)
		if p == "" {
			return "noop"
		}
		return do("mv out "+p, os.Rename(p, filepath.Join(m.out, m.name())))
	case 15: // replace a file by a directory, or a directory by a file
		if p := m.pick(files); p != "" && m.r.IntN(2) == 0 {
			os.Remove(p)
			os.Mkdir(p, 0o755)
			return do("file→dir "+p, os.WriteFile(filepath.Join(p, "in"), []byte("x"), 0o644))
		}
		p := m.pick(dirs)
		if p == "" {
			return "noop"
		}
		os.RemoveAll(p)
		return do("dir→file "+p, os.WriteFile(p, []byte("was a dir"), 0o644))
	default: // touch: mtime only
		p := m.pick(files)
		if p == "" {
			return "noop"
		}
		t := time.Unix(int64(1e9+m.r.IntN(1e6)), 0)
		return do("touch "+p, os.Chtimes(p, t, t))
	}
}

// checkIncremental runs the capture's scan and a full scan of the same
// tree at the same clock and fails unless their manifests are identical.
func checkIncremental(t testing.TB, st *Store, clk *stepClock, old *index, what string) *index {
	t.Helper()
	ctx := context.Background()
	clk.set(time.Now())
	inc, err := st.scan(ctx, old)
	if err != nil {
		t.Fatalf("after %s: scan: %v", what, err)
	}
	full, err := st.fullScan(ctx, old)
	if err != nil {
		t.Fatalf("after %s: full scan: %v", what, err)
	}
	if !bytes.Equal(inc.encode(), full.encode()) {
		var detail []string
		for _, p := range indexDiffPaths(inc, full, 5) {
			detail = append(detail, fmt.Sprintf("%s: incremental %s, full %s, before %s", p, describeEntry(inc.entries[p]), describeEntry(full.entries[p]), describeEntry(old.entries[p])))
		}
		t.Fatalf("after %s: incremental and full scans differ:\n%s", what, strings.Join(detail, "\n"))
	}
	// The changeset computed from the scan's own record of what it looked
	// at is the one a comparison of the whole manifests gives.
	whole := &index{entries: inc.entries}
	fast, _ := json.Marshal(diffIndex(old, inc))
	slow, _ := json.Marshal(diffIndex(old, whole))
	if !bytes.Equal(fast, slow) {
		t.Fatalf("after %s: changeset %s, want %s", what, fast, slow)
	}
	return inc
}

// TestIncrementalMatchesFullScan is the change capture's core property: on
// random sequences of mutations, the incremental scan (fanotify events)
// returns exactly the manifest a full walk of the tree returns.
func TestIncrementalMatchesFullScan(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			runMutations(t, seed, 120, 0)
		})
		// With the clock an hour ahead no entry is racy: only the events
		// make the incremental scan look at a path again.
		t.Run(fmt.Sprint(seed, "-events-only"), func(t *testing.T) {
			runMutations(t, seed, 120, time.Hour)
		})
	}
}

func runMutations(t testing.TB, seed uint64, steps int, ahead time.Duration) {
	st, ws, clk := newWatchedStore(t)
	clk.ahead = ahead
	m := &mutator{t: t, ws: ws, out: t.TempDir(), r: rand.New(rand.NewPCG(seed, seed^0x9e37))}
	for i := 0; i < 20; i++ { // a starting tree
		m.step()
	}
	ctx := context.Background()
	ix, err := st.scan(ctx, newIndex())
	if err != nil {
		t.Fatal(err)
	}
	before := st.CaptureStats()
	for i := 0; i < steps; i++ {
		var did []string
		for k := m.r.IntN(3) + 1; k > 0; k-- {
			did = append(did, m.step())
		}
		ix = checkIncremental(t, st, clk, ix, fmt.Sprintf("step %d (%s)", i, strings.Join(did, "; ")))
	}
	after := st.CaptureStats()
	if inc := after.Incremental - before.Incremental; inc < int64(steps)*9/10 {
		t.Fatalf("only %d of %d scans were incremental (last full: %s)", inc, steps, after.LastFull)
	}
	if after.Events == 0 || after.Inside == 0 {
		t.Fatalf("the watcher saw nothing: %+v", after)
	}
}

// FuzzIncrementalScan drives the same property from fuzzed seeds.
func FuzzIncrementalScan(f *testing.F) {
	for _, s := range []uint64{7, 42, 1 << 40, 12345678} {
		f.Add(s, uint8(30))
	}
	f.Fuzz(func(t *testing.T, seed uint64, steps uint8) {
		runMutations(t, seed, int(steps%60)+1, time.Hour)
	})
}

// TestCaptureBarrier proves the drain barrier: a child process makes
// changes and exits; the very next scan (no sleep) sees every one, and
// it was incremental.
func TestCaptureBarrier(t *testing.T) {
	st, ws, clk := newWatchedStore(t)
	ctx := context.Background()
	ix, err := st.scan(ctx, newIndex())
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 20; round++ {
		name := fmt.Sprintf("f%d", round)
		// The writer is another process, as a container's command is; it
		// writes one file through a mapping it never unmaps (its exit
		// does, and that raises the only event for that write).
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$")
		cmd.Env = append(os.Environ(), "SNAPSHOT_TEST_WRITER="+ws, fmt.Sprintf("SNAPSHOT_TEST_ROUND=%d", round))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		clk.set(time.Now())
		before := st.CaptureStats().Incremental
		next, err := st.scan(ctx, ix)
		if err != nil {
			t.Fatal(err)
		}
		if st.CaptureStats().Incremental != before+1 {
			t.Fatalf("round %d: scan was not incremental: %s", round, st.CaptureStats().LastFull)
		}
		ch := diffIndex(ix, next)
		want := map[string]bool{fmt.Sprintf("d%d", round): true, fmt.Sprintf("d%d/e", round): true, fmt.Sprintf("d%d/e/%s", round, name): true, name: true}
		for _, c := range ch {
			delete(want, c.Path)
		}
		if len(want) > 0 {
			t.Fatalf("round %d: changes not seen right after the writer exited: %v (saw %v)", round, want, ch)
		}
		data, _ := os.ReadFile(filepath.Join(ws, name))
		if h := next.entries[name].Hash; h != hashBytes(data) {
			t.Fatalf("round %d: %s recorded with a stale hash", round, name)
		}
		ix = next
	}
}

// TestHelperWriter is the writer process of TestCaptureBarrier.
func TestHelperWriter(t *testing.T) {
	ws := os.Getenv("SNAPSHOT_TEST_WRITER")
	if ws == "" {
		t.Skip("a helper process")
	}
	round := os.Getenv("SNAPSHOT_TEST_ROUND")
	d := filepath.Join(ws, "d"+round, "e")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(ws, "f"+round)
	if err := os.WriteFile(filepath.Join(d, "f"+round), []byte(round), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte("xxxx"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := unix.Mmap(int(f.Fd()), 0, 4, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	copy(b, "yyyy") // left mapped: the process exit unmaps it
	os.Exit(0)
}

// TestCaptureCheckFindsMissedEvent injects a missed event (a change made
// while the watcher's reports are thrown away) and checks that the periodic
// full scan finds it, uses the full result and counts the mismatch.
func TestCaptureCheckFindsMissedEvent(t *testing.T) {
	st, ws, clk := newWatchedStore(t, WithCaptureCheck(3, 0))
	ctx := context.Background()
	a := filepath.Join(ws, "a")
	must(t, os.WriteFile(a, []byte("one"), 0o644))
	long := time.Unix(1e9, 0) // not racy: only an event makes a scan look
	must(t, os.Chtimes(a, long, long))
	ix, err := st.scan(ctx, newIndex())
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(a, []byte("two, and longer"), 0o644))
	must(t, os.Chtimes(a, long, long.Add(time.Second)))
	st.cap.w.take() // the events are lost
	var got *index = ix
	for i := 0; i < 3; i++ {
		clk.set(time.Now())
		if got, err = st.scan(ctx, got); err != nil {
			t.Fatal(err)
		}
	}
	cs := st.CaptureStats()
	if cs.Checks != 1 || cs.Mismatches != 1 {
		t.Fatalf("checks %d mismatches %d, want 1 and 1", cs.Checks, cs.Mismatches)
	}
	if got.entries["a"].Size != int64(len("two, and longer")) {
		t.Fatalf("the full scan's result was not used: %+v", got.entries["a"].Node)
	}
	// And a check that agrees counts no mismatch.
	for i := 0; i < 3; i++ {
		clk.set(time.Now())
		if got, err = st.scan(ctx, got); err != nil {
			t.Fatal(err)
		}
	}
	if cs := st.CaptureStats(); cs.Checks != 2 || cs.Mismatches != 1 {
		t.Fatalf("checks %d mismatches %d, want 2 and 1", cs.Checks, cs.Mismatches)
	}
}

// TestCaptureTrust: only an index this watcher produced (or a clone of
// it) starts an incremental scan; one read from disk, and anything after
// a lost report, is scanned whole.
func TestCaptureTrust(t *testing.T) {
	st, ws, _ := newWatchedStore(t)
	ctx := context.Background()
	must(t, os.WriteFile(filepath.Join(ws, "a"), []byte("one"), 0o644))
	ix, err := st.scan(ctx, newIndex())
	if err != nil {
		t.Fatal(err)
	}
	full := func(old *index, want bool, what string) *index {
		t.Helper()
		b := st.CaptureStats().Full
		next, err := st.scan(ctx, old)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.CaptureStats().Full > b; got != want {
			t.Fatalf("%s: full scan %v, want %v", what, got, want)
		}
		return next
	}
	ix = full(ix, false, "own index")
	ix = full(ix.clone(), false, "a clone of it")
	dec, err := decodeIndex(ix.encode())
	if err != nil {
		t.Fatal(err)
	}
	ix = full(dec, true, "an index read from disk")
	st.cap.w.mu.Lock()
	st.cap.w.markLost("test")
	st.cap.w.mu.Unlock()
	ix = full(ix, true, "after a lost report")
	full(ix, false, "after the full scan")
	// A checkpoint hard-links the saved manifest (its ctime changes, so it
	// is read back from disk): the same content, by hash, is still trusted.
	if _, err := st.Checkpoint(ctx, "cp", CallInfo{}); err != nil {
		t.Fatal(err)
	}
	loaded, err := st.loadIndex()
	if err != nil {
		t.Fatal(err)
	}
	if loaded == st.cap.base {
		t.Fatal("the manifest was not read back from disk")
	}
	must(t, os.WriteFile(filepath.Join(ws, "b"), []byte("new"), 0o644))
	next := full(loaded, false, "the saved manifest read back")
	if next.entries["b"] == nil {
		t.Fatal("the change after the checkpoint was not seen")
	}
	// Another process's manifest (different content) is not.
	other := loaded.clone()
	other.from = nil
	delete(other.entries, "a")
	if _, err := st.saveIndex(other); err != nil {
		t.Fatal(err)
	}
	st.cap.saved.Store(nil) // as if another process wrote it
	again, _ := st.loadIndex()
	full(again, true, "a manifest another process wrote")
}

// TestCaptureScanModeHasNoWatcher: change_capture=scan never starts one.
func TestCaptureScanModeHasNoWatcher(t *testing.T) {
	st, err := Open(context.Background(), t.TempDir(), t.TempDir(), WithChangeCapture(CaptureScan))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if cs := st.CaptureStats(); cs.Mode != "scan" || st.cap.w != nil {
		t.Fatalf("mode %q", cs.Mode)
	}
}

func hashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func describeEntry(e *ientry) string {
	if e == nil {
		return "absent"
	}
	return fmt.Sprintf("{%s %o size %d mtime %d ctime %d ino %d racy %v hash %.8s}", e.Type, e.Mode, e.Size, e.MTime.UnixNano(), e.ctime, e.ino, e.racy, e.Hash)
}

// TestCaptureOverflow: when the event queue overflows (here: the reader
// is held off while 20000 files are made), the next scan is a full one
// and finds everything.
func TestCaptureOverflow(t *testing.T) {
	st, ws, _ := newWatchedStore(t)
	ctx := context.Background()
	ix, err := st.scan(ctx, newIndex())
	if err != nil {
		t.Fatal(err)
	}
	st.cap.w.mu.Lock() // the goroutine cannot drain meanwhile
	for i := 0; i < 20000; i++ {
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%05d", i)), nil, 0o644); err != nil {
			st.cap.w.mu.Unlock()
			t.Fatal(err)
		}
	}
	st.cap.w.mu.Unlock()
	next, err := st.scan(ctx, ix)
	if err != nil {
		t.Fatal(err)
	}
	if cs := st.CaptureStats(); cs.LastFull != "fanotify queue overflow" {
		t.Fatalf("last full scan: %q, want the overflow", cs.LastFull)
	}
	if len(next.entries) != 20000 {
		t.Fatalf("%d entries, want 20000", len(next.entries))
	}
}

// TestCaptureTrustsUnchangedDiskIndex: a process whose first (full) scan
// finds the manifest another process saved unchanged vouches for it, so a
// shell call's post-scan is incremental even though beginning it
// hard-linked the manifest (which makes loadIndex read it again): a
// one-shot `agentbox exec` pays one full scan, not two.
func TestCaptureTrustsUnchangedDiskIndex(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("fanotify change capture needs root (CAP_SYS_ADMIN)")
	}
	ctx := context.Background()
	ws, state := t.TempDir(), t.TempDir()
	must(t, os.WriteFile(filepath.Join(ws, "a"), []byte("one"), 0o644))
	opts := []Option{WithChangeCapture(CaptureAuto), WithCaptureCheck(0, 0)}
	first, err := Open(ctx, state, ws, opts...)
	if err != nil {
		t.Fatal(err)
	}
	c, err := first.Begin(ctx, CallInfo{Tool: "Bash"}, Whole())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	first.Close()

	st, err := Open(ctx, state, ws, opts...) // another process
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.CaptureStats().Mode != "watch" {
		t.Fatalf("the watcher did not start: %s", st.CaptureStats().Reason)
	}
	c, err = st.Begin(ctx, CallInfo{Tool: "Bash"}, Whole())
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(ws, "b"), []byte("two"), 0o644))
	e, err := c.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Changes) != 1 || e.Changes[0].Path != "b" {
		t.Fatalf("changes %+v, want b added", e.Changes)
	}
	if cs := st.CaptureStats(); cs.Full != 1 || cs.Incremental != 1 {
		t.Fatalf("scans: %d full, %d incremental; want 1 and 1 (%s)", cs.Full, cs.Incremental, cs.LastFull)
	}
}

// tickClock is a clock that moves one second at every reading.
type tickClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *tickClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.t
	c.t = c.t.Add(time.Second)
	return t
}

func (c *tickClock) peek() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// TestCaptureCheckSameMoment: the full scan that checks an incremental one
// judges racy mtimes by the same moment. A second boundary passing between
// the two scans made a file the incremental scan had rightly called racy
// (changed in the second it began) not racy for the check: a mismatch
// counted, though no change was missed.
func TestCaptureCheckSameMoment(t *testing.T) {
	clk := &tickClock{t: time.Now().Truncate(time.Second)}
	st, ws, _ := newWatchedStore(t, WithCaptureCheck(1, 0), WithClock(clk.now))
	ctx := context.Background()
	a := filepath.Join(ws, "a")
	if err := os.WriteFile(a, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	ix, err := st.scan(ctx, newIndex())
	if err != nil {
		t.Fatal(err)
	}
	// Changed in the second the next scan begins: racy for it.
	if err := os.WriteFile(a, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	at := clk.peek()
	if err := os.Chtimes(a, at, at); err != nil {
		t.Fatal(err)
	}
	got, err := st.scan(ctx, ix)
	if err != nil {
		t.Fatal(err)
	}
	cs := st.CaptureStats()
	if cs.Incremental != 1 || cs.Checks != 1 || cs.Mismatches != 0 {
		t.Fatalf("incremental %d checks %d mismatches %d (%s), want 1, 1 and 0", cs.Incremental, cs.Checks, cs.Mismatches, cs.LastFull)
	}
	if e := got.entries["a"]; e == nil || !e.racy || e.Size != 3 {
		t.Fatalf("a: %+v, want a racy entry of size 3", e)
	}
}

// must fails the test on a fixture step's error.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
