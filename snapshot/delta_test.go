package snapshot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// deltaEntries is a pool of entries of every kind the encoding knows.
func deltaEntries() []*ientry {
	h := func(c byte) string {
		return fmt.Sprintf("%02x", c) + "00000000000000000000000000000000000000000000000000000000000000"
	}
	return []*ientry{
		{Node: Node{Type: TypeDir, Mode: 0o755, MTime: time.Unix(1, 2).UTC()}, ino: 7, ctime: 9},
		{Node: Node{Type: TypeFile, Mode: 0o644, Size: 12, MTime: time.Unix(3, 4).UTC(), Hash: h(0xaa)}, racy: true, ino: 1 << 40, ctime: -5},
		{Node: Node{Type: TypeSymlink, Link: "../x\xfe", MTime: time.Unix(5, 0).UTC()}},
		{Node: Node{Type: TypeFile, Unreadable: true, Size: 5, MTime: time.Unix(6, 0).UTC()}},
		{Node: Node{Type: TypeFIFO, Mode: 0o600, MTime: time.Unix(7, 0).UTC()}},
		{Node: Node{Type: TypeFile, Mode: 0o640, Size: 3, MTime: time.Unix(8, 0).UTC(), Owner: ownerOf(1000, 1001), Hash: h(0xbb), Unstored: true}},
		{Node: Node{Type: TypeDir, Mode: 0o700, MTime: time.Unix(9, 0).UTC(), Owner: ownerOf(0, 0)}},
		{Node: Node{Type: TypeFile, Mode: 0o600, Size: 1 << 33, MTime: time.Unix(1e9, 7).UTC(), Hash: h(0xcc)}, ino: 3, ctime: 1e18},
	}
}

func indexesEqual(t *testing.T, what string, got, want *index) {
	t.Helper()
	if !bytes.Equal(got.encode(), want.encode()) {
		for p, e := range want.entries {
			if !entryEqual(e, got.entries[p]) {
				t.Errorf("%s: %q = %+v, want %+v", what, p, got.entries[p], e)
			}
		}
		for p := range got.entries {
			if want.entries[p] == nil {
				t.Errorf("%s: %q present, want absent", what, p)
			}
		}
		t.Fatalf("%s: manifests differ", what)
	}
}

// deltaFixture is an index, a delta extending it of three records, and
// the index each prefix of those records makes.
func deltaFixture() (base *index, sum []byte, data []byte, offs []int, states []*index) {
	pool := deltaEntries()
	base = newIndex()
	base.entries["a"] = pool[0]
	base.entries["a/b.go"] = pool[1]
	base.entries["keep"] = pool[4]
	s := sha256.Sum256(base.encode())
	sum = s[:]
	data = deltaHeader(sum)
	states = []*index{base}
	cur := base
	for _, up := range []map[string]*ientry{
		{"a/b.go": pool[5], "a/l": pool[2], "a/bad\xff\nname": pool[3]},
		{"a/l": nil, "r": pool[6]},
		{"big": pool[7], "a/b.go": nil},
	} {
		cur = cur.withUpdates(up)
		offs = append(offs, len(data))
		data = append(data, encodeDeltaRecord(cur, cur.deltaPaths)...)
		states = append(states, cur)
	}
	offs = append(offs, len(data))
	return base, sum, data, offs, states
}

func replayed(t *testing.T, base *index, data, sum []byte) (*index, int, int, error) {
	t.Helper()
	ix := base.clone()
	n, end, err := replayDelta(ix, data, sum)
	return ix, n, end, err
}

func TestDeltaReplay(t *testing.T) {
	base, sum, data, offs, states := deltaFixture()
	ix, n, end, err := replayed(t, base, data, sum)
	if err != nil || n != 3 || end != len(data) {
		t.Fatalf("replay = %d records to %d, %v; want 3 to %d", n, end, err, len(data))
	}
	indexesEqual(t, "all records", ix, states[3])

	// A torn tail at every length: the records before it, never a panic.
	for cut := deltaHeaderLen; cut < len(data); cut++ {
		k := 0
		for k+1 < len(offs) && offs[k+1] <= cut {
			k++
		}
		ix, n, end, err := replayed(t, base, data[:cut], sum)
		if cut == offs[k] {
			if err != nil || n != k {
				t.Fatalf("cut at record boundary %d: %d records, %v", cut, n, err)
			}
		} else if !errors.Is(err, ErrCorrupt) || n != k || end != offs[k] {
			t.Fatalf("cut at %d: %d records to %d, %v; want %d to %d and ErrCorrupt", cut, n, end, err, k, offs[k])
		}
		indexesEqual(t, fmt.Sprintf("cut at %d", cut), ix, states[k])
	}
	// Any flipped byte of a record: the records before it.
	for i := deltaHeaderLen; i < len(data); i++ {
		bad := bytes.Clone(data)
		bad[i] ^= 0x10
		k := 0
		for offs[k+1] <= i {
			k++
		}
		ix, n, _, err := replayed(t, base, bad, sum)
		if !errors.Is(err, ErrCorrupt) || n != k {
			t.Fatalf("flipped byte %d: %d records, %v; want %d and ErrCorrupt", i, n, err, k)
		}
		indexesEqual(t, fmt.Sprintf("flipped byte %d", i), ix, states[k])
	}
}

// frame makes a record of payload with a right length and checksum.
func frame(payload []byte) []byte {
	out := binary.LittleEndian.AppendUint32(nil, uint32(len(payload)))
	out = append(out, payload...)
	return binary.LittleEndian.AppendUint32(out, crc32.Checksum(out, crcTable))
}

func TestDeltaBadRecords(t *testing.T) {
	base, sum, data, offs, states := deltaFixture()
	first := data[:offs[1]]
	tests := []struct {
		name  string
		data  []byte
		sum   []byte
		stale bool
		n     int
	}{
		{name: "unknown record kind", data: append(bytes.Clone(first), frame([]byte{9, 0})...), n: 1},
		{name: "unknown operation", data: append(bytes.Clone(first), frame([]byte{deltaUpdates, 1, 7, 1, 'x'})...), n: 1},
		{name: "empty path", data: append(bytes.Clone(first), frame([]byte{deltaUpdates, 1, deltaDelete, 0})...), n: 1},
		{name: "trailing bytes", data: append(bytes.Clone(first), frame([]byte{deltaUpdates, 1, deltaDelete, 1, 'x', 0})...), n: 1},
		{name: "short record", data: append(bytes.Clone(first), frame([]byte{deltaUpdates, 2, deltaDelete, 1, 'x'})...), n: 1},
		{name: "zero length", data: append(bytes.Clone(first), 0, 0, 0, 0, 0, 0, 0, 0), n: 1},
		{name: "zeros after a power loss", data: append(bytes.Clone(data), make([]byte, 4096)...), n: 3},
		{name: "huge length", data: append(bytes.Clone(first), 0xff, 0xff, 0xff, 0x7f, 1, 2, 3, 4), n: 1},
		{name: "good record after a bad one is not applied", data: append(append(bytes.Clone(first), frame([]byte{9})...), data[offs[1]:offs[2]]...), n: 1},
		{name: "another index", data: data, sum: make([]byte, 32), stale: true},
		{name: "bad magic", data: append([]byte("agentbox-manifest-delta-9\n"), data[len(deltaMagic):]...)},
		{name: "short header", data: data[:deltaHeaderLen-1]},
		{name: "empty file", data: []byte{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := sum
			if tc.sum != nil {
				s = tc.sum
			}
			ix, n, _, err := replayed(t, base, tc.data, s)
			if tc.stale {
				if !errors.Is(err, errStaleDelta) || n != 0 {
					t.Fatalf("%d records, %v; want errStaleDelta", n, err)
				}
			} else if !errors.Is(err, ErrCorrupt) || n != tc.n {
				t.Fatalf("%d records, %v; want %d and ErrCorrupt", n, err, tc.n)
			}
			indexesEqual(t, tc.name, ix, states[tc.n])
		})
	}
}

func FuzzReplayDelta(f *testing.F) {
	base, sum, data, _, _ := deltaFixture()
	f.Add(data)
	f.Fuzz(func(t *testing.T, data []byte) {
		ix := base.clone()
		replayDelta(ix, data, sum) // must not panic
	})
}

// deltaModel runs random manifest updates on stores over one state dir
// and checks that every load equals the model of what was saved.
type deltaModel struct {
	t      *testing.T
	r      *rand.Rand
	stores []*Store
	model  map[string]*ientry
	pool   []*ientry
	paths  []string
	// What happened, so that the test knows it covered each case.
	appends, wholes, compactions, equalWholes int
}

func (m *deltaModel) modelIndex() *index {
	ix := newIndex()
	for p, e := range m.model {
		ix.entries[p] = e
	}
	return ix
}

func (m *deltaModel) check(what string, st *Store) {
	m.t.Helper()
	ix, err := st.loadIndex()
	if err != nil {
		m.t.Fatal(err)
	}
	indexesEqual(m.t, what, ix, m.modelIndex())
	// The same as the whole manifest saved and read back.
	whole, err := decodeIndex(ix.encode())
	if err != nil {
		m.t.Fatal(err)
	}
	indexesEqual(m.t, what+" (saved whole)", ix, whole)
}

func (m *deltaModel) step(i int) {
	m.t.Helper()
	st := m.stores[m.r.IntN(len(m.stores))]
	ix, err := st.loadIndex()
	if err != nil {
		m.t.Fatal(err)
	}
	indexesEqual(m.t, fmt.Sprintf("step %d: before", i), ix, m.modelIndex())
	switch k := m.r.IntN(10); {
	case k == 9 && st.hasIndex():
		// A whole scan finding the tree as the index file alone has it
		// (the delta's changes undone): the delta naming that content must
		// not be replayed over the new index.
		data, err := os.ReadFile(st.path("index"))
		if err != nil {
			m.t.Fatal(err)
		}
		next, err := decodeIndex(data)
		if err != nil {
			m.t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if deltaBaseIs(st.path(deltaName), sum[:]) {
			m.equalWholes++
		}
		if _, err := st.saveIndex(next); err != nil {
			m.t.Fatal(err)
		}
		m.wholes++
		m.model = next.entries
	case k < 8 && st.hasIndex():
		// A file-scoped update of a few paths.
		up := map[string]*ientry{}
		for j := 0; j < 1+m.r.IntN(3); j++ {
			p := m.paths[m.r.IntN(len(m.paths))]
			if m.r.IntN(4) == 0 {
				up[p] = nil
			} else {
				up[p] = m.pool[m.r.IntN(len(m.pool))]
			}
		}
		st.mu.Lock()
		before := st.idxDelta
		st.mu.Unlock()
		if _, err := st.saveIndex(ix.withUpdates(up)); err != nil {
			m.t.Fatal(err)
		}
		st.mu.Lock()
		after := st.idxDelta
		st.mu.Unlock()
		if after.recs > 0 {
			m.appends++
		} else if before.recs > 0 {
			m.compactions++
		}
		for p, e := range up {
			if e == nil {
				delete(m.model, p)
			} else {
				m.model[p] = e
			}
		}
	default:
		// A whole scan's result (a fresh index).
		next := newIndex()
		for p, e := range m.model {
			next.entries[p] = e
		}
		for j := 0; j < m.r.IntN(3); j++ {
			p := m.paths[m.r.IntN(len(m.paths))]
			if m.r.IntN(3) == 0 {
				delete(next.entries, p)
			} else {
				next.entries[p] = m.pool[m.r.IntN(len(m.pool))]
			}
		}
		sum := sha256.Sum256(next.encode())
		if deltaBaseIs(st.path(deltaName), sum[:]) {
			m.equalWholes++
		}
		if _, err := st.saveIndex(next); err != nil {
			m.t.Fatal(err)
		}
		if h := st.manifestHash(next); h == "" {
			m.t.Fatalf("step %d: a whole save has no manifest hash", i)
		}
		m.wholes++
		m.model = next.entries
	}
	// The store that saved, the others (another process's cache), and a
	// process that never read it.
	for j, o := range m.stores {
		m.check(fmt.Sprintf("step %d: store %d", i, j), o)
	}
	if i%7 == 0 {
		fresh, err := Open(context.Background(), filepath.Dir(st.dir), st.workspace)
		if err != nil {
			m.t.Fatal(err)
		}
		m.check(fmt.Sprintf("step %d: a new store", i), fresh)
		fresh.Close()
	}
}

// TestDeltaMatchesWholeSave: after random sequences of file-scoped
// updates and whole saves, made by two stores on one state dir (two
// processes), the manifest each loads (index + delta) is the model's, and
// the same as that manifest saved whole.
func TestDeltaMatchesWholeSave(t *testing.T) {
	defer func(v int64) { deltaMinLimit = v }(deltaMinLimit)
	deltaMinLimit = 400 // compactions every few records
	for seed := uint64(0); seed < 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			ctx := context.Background()
			ws, state := t.TempDir(), t.TempDir()
			m := &deltaModel{t: t, r: rand.New(rand.NewPCG(seed, 7)), model: map[string]*ientry{}, pool: deltaEntries()[:3]}
			m.paths = append(m.paths, "a", "b", "c/d", "c/e\n", "f")
			for range 2 {
				st, err := Open(ctx, state, ws)
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				m.stores = append(m.stores, st)
			}
			for i := range 300 {
				m.step(i)
			}
			t.Logf("%d appends, %d whole saves (%d of the content the delta extended), %d compactions", m.appends, m.wholes, m.equalWholes, m.compactions)
			if m.appends == 0 || m.wholes == 0 || m.compactions == 0 || m.equalWholes == 0 {
				t.Fatalf("a case was not covered: %d appends, %d whole saves (%d equal), %d compactions", m.appends, m.wholes, m.equalWholes, m.compactions)
			}
		})
	}
}

// TestDeltaTornTail: a torn record at the end of the delta (a crash in
// the middle of an append) is ignored with what follows it; the manifest
// is the one the previous call left; the next update writes the whole
// manifest rather than append after the damage; and the change the torn
// record was about is taken as made outside any call (the next shell
// call's entry does not hold it).
func TestDeltaTornTail(t *testing.T) {
	ctx := context.Background()
	ws, state := t.TempDir(), t.TempDir()
	write := func(rel, body string) {
		if err := os.WriteFile(filepath.Join(ws, rel), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a", "a0")
	write("b", "b0")
	st, err := Open(ctx, state, ws)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	call := func(st *Store, scope Scope, fn func()) Entry {
		t.Helper()
		c, err := st.Begin(ctx, CallInfo{Tool: "t"}, scope)
		if err != nil {
			t.Fatal(err)
		}
		fn()
		e, err := c.Finish(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	call(st, Whole(), func() {})
	call(st, File("a"), func() { write("a", "a1") })
	delta := st.path(deltaName)
	good, err := os.ReadFile(delta)
	if err != nil {
		t.Fatalf("no delta after a file-scoped call: %v", err)
	}
	call(st, File("b"), func() { write("b", "b1") })
	full, _ := os.ReadFile(delta)
	if len(full) <= len(good) {
		t.Fatalf("the second call appended nothing (%d → %d bytes)", len(good), len(full))
	}
	// Tear the last record.
	if err := os.WriteFile(delta, full[:len(full)-3], 0o600); err != nil {
		t.Fatal(err)
	}
	st2, err := Open(ctx, state, ws)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	ix, err := st2.loadIndex()
	if err != nil {
		t.Fatal(err)
	}
	if st2.idxDelta.ok || st2.idxDelta.recs != 1 {
		t.Fatalf("delta state %+v, want one record and not appendable", st2.idxDelta)
	}
	if e := ix.entries["b"]; e == nil || e.Size != 2 || e.Hash != hashOf("b0") {
		t.Fatalf("b = %+v, want the entry before the torn record (b0)", e)
	}
	if e := ix.entries["a"]; e == nil || e.Hash != hashOf("a1") {
		t.Fatalf("a = %+v, want the first record's a1", e)
	}
	// The next update writes the whole manifest.
	write("c", "c0")
	call(st2, File("c"), func() { write("c", "c1") })
	if st2.idxDelta.recs != 0 || st2.manifestHash(st2.idx) == "" {
		t.Fatalf("after the damage, an update appended (delta %+v)", st2.idxDelta)
	}
	st3, err := Open(ctx, state, ws)
	if err != nil {
		t.Fatal(err)
	}
	defer st3.Close()
	ix3, err := st3.loadIndex()
	if err != nil {
		t.Fatal(err)
	}
	indexesEqual(t, "a new store after the whole save", ix3, st2.idx)
	// b's write is journaled once, by its call; the next shell call's
	// entry does not hold it.
	e := call(st3, Whole(), func() { write("a", "a2") })
	if len(e.Changes) != 1 || e.Changes[0].Path != "a" {
		t.Fatalf("shell entry changes %+v, want a only", e.Changes)
	}
	// Appends go on after that.
	call(st3, File("b"), func() { write("b", "b2") })
	if st3.idxDelta.recs != 1 {
		t.Fatalf("delta %+v, want one record", st3.idxDelta)
	}
}

func hashOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return fmt.Sprintf("%x", h[:])
}

// TestDeltaCrashChild is the child of TestDeltaCrash: file-scoped calls
// until it kills itself at a hook point.
func TestDeltaCrashChild(t *testing.T) {
	ws, state := os.Getenv("DELTA_CRASH_WS"), os.Getenv("DELTA_CRASH_STATE")
	if ws == "" {
		return // not the child
	}
	var dieAt, run int
	fmt.Sscan(os.Getenv("DELTA_CRASH_HOOK"), &dieAt)
	fmt.Sscan(os.Getenv("DELTA_CRASH_RUN"), &run)
	hits := 0
	die := func() {
		hits++
		if hits == dieAt {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	atomicWriteHook = die
	ctx := context.Background()
	st, err := Open(ctx, state, ws, withHook(func(string) { die() }))
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(3)
	}
	for i := range 10 {
		rel := deltaCrashFiles[i%len(deltaCrashFiles)]
		body := fmt.Sprintf("run %d call %d", run, i)
		c, err := st.Begin(ctx, CallInfo{Tool: "Write"}, File(rel))
		if err != nil {
			fmt.Println("begin:", err)
			os.Exit(3)
		}
		fmt.Println("begun", rel)
		if err := os.WriteFile(filepath.Join(ws, rel), []byte(body), 0o644); err != nil {
			fmt.Println("write:", err)
			os.Exit(3)
		}
		if _, err := c.Finish(ctx); err != nil {
			fmt.Println("finish:", err)
			os.Exit(3)
		}
	}
	os.Exit(0)
}

var deltaCrashFiles = []string{"a", "d/b", "d/e/c"}

// TestDeltaCrash kills a process at every hook point of file-scoped
// calls (the middle of a delta append among them) and checks, with a new
// process, that the manifest it loads is at most the killed call stale:
// every other path's entry is the content on disk, and the killed call's
// path has its content before or after the call. Then a file-scoped call
// and a new process see a manifest that holds it (nothing was appended
// after a torn record).
func TestDeltaCrash(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	ws, state := filepath.Join(base, "ws"), filepath.Join(base, "state")
	for _, rel := range deltaCrashFiles {
		must(t, os.MkdirAll(filepath.Join(ws, filepath.Dir(rel)), 0o755))
		must(t, os.WriteFile(filepath.Join(ws, rel), []byte("initial "+rel), 0o644))
	}
	st, err := Open(ctx, state, ws)
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.Begin(ctx, CallInfo{Tool: "Bash"}, Whole())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	st.Close()
	// The manifest must match the disk at every path but skip, where it
	// may also hold prev.
	check := func(what, skip, prev string) *Store {
		t.Helper()
		st, err := Open(ctx, state, ws)
		if err != nil {
			t.Fatalf("%s: open: %v", what, err)
		}
		ix, err := st.loadIndex()
		if err != nil {
			t.Fatal(err)
		}
		for _, rel := range deltaCrashFiles {
			body, err := os.ReadFile(filepath.Join(ws, rel))
			if err != nil {
				t.Fatal(err)
			}
			e := ix.entries[rel]
			if e != nil && e.Hash == hashOf(string(body)) || rel == skip && e != nil && e.Hash == hashOf(prev) {
				continue
			}
			t.Fatalf("%s: manifest entry of %s is %+v; on disk %q (stale allowed: %q)", what, rel, e, body, map[bool]string{true: prev}[rel == skip])
		}
		return st
	}
	torn, killed := 0, 0
	runs := 90
	if testing.Short() {
		runs = 30
	}
	for run := range runs {
		before := map[string]string{}
		for _, rel := range deltaCrashFiles {
			b, _ := os.ReadFile(filepath.Join(ws, rel))
			before[rel] = string(b)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestDeltaCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "DELTA_CRASH_WS="+ws, "DELTA_CRASH_STATE="+state,
			fmt.Sprint("DELTA_CRASH_HOOK=", 1+run*3%130), fmt.Sprint("DELTA_CRASH_RUN=", run))
		out, err := cmd.Output()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled():
			killed++
		case err != nil:
			t.Fatalf("run %d: child failed: %v\n%s", run, err, out)
		}
		// The call killed: the last one begun; its path held what the
		// call before it on that path (or an earlier run) wrote.
		skip, prev := "", ""
		if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) > 0 && strings.HasPrefix(lines[len(lines)-1], "begun ") {
			skip = strings.TrimPrefix(lines[len(lines)-1], "begun ")
			prev = before[skip]
			for i, l := range lines[:len(lines)-1] {
				if l == "begun "+skip {
					prev = fmt.Sprintf("run %d call %d", run, i)
				}
			}
		}
		dd, _ := os.ReadFile(filepath.Join(state, "snapshots", deltaName))
		if ix := newIndex(); len(dd) > 0 {
			data, _ := os.ReadFile(filepath.Join(state, "snapshots", "index"))
			sum := sha256.Sum256(data)
			if _, _, err := replayDelta(ix, dd, sum[:]); errors.Is(err, ErrCorrupt) {
				torn++
			}
		}
		st := check(fmt.Sprintf("run %d: after the crash", run), skip, prev)
		// One more call, seen by a new process.
		rel := deltaCrashFiles[run%len(deltaCrashFiles)]
		c, err := st.Begin(ctx, CallInfo{Tool: "Write"}, File(rel))
		if err != nil {
			t.Fatal(err)
		}
		must(t, os.WriteFile(filepath.Join(ws, rel), []byte(fmt.Sprint("after run ", run)), 0o644))
		if _, err := c.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		st.Close()
		if rel == skip {
			skip = ""
		}
		st = check(fmt.Sprintf("run %d: a call after the crash", run), skip, prev)
		if skip != "" {
			// The killed call's path stays stale until a whole scan
			// (as when a crash came between the commit and the save of
			// a whole manifest): one now, so that the next run starts
			// from a manifest that matches the disk.
			c, err := st.Begin(ctx, CallInfo{Tool: "Bash"}, Whole())
			if err != nil {
				t.Fatal(err)
			}
			e, err := c.Finish(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(e.Changes) != 0 {
				t.Fatalf("run %d: a shell call that changed nothing journaled %+v", run, e.Changes)
			}
			st.Close()
			st = check(fmt.Sprintf("run %d: after a whole scan", run), "", "")
		}
		st.Close()
	}
	t.Logf("%d runs: %d killed, %d left a damaged delta", runs, killed, torn)
	if torn == 0 || killed < runs/2 {
		t.Fatalf("the crashes did not cover a torn delta (%d runs, %d killed, %d torn)", runs, killed, torn)
	}
}

// TestDeltaTwoStores: file-scoped calls of two stores on one state dir
// (two processes) append to one delta, and each store's manifest holds
// the other's updates.
func TestDeltaTwoStores(t *testing.T) {
	ctx := context.Background()
	ws, state := t.TempDir(), t.TempDir()
	for _, rel := range []string{"a", "b"} {
		must(t, os.WriteFile(filepath.Join(ws, rel), []byte(rel+"0"), 0o644))
	}
	var stores []*Store
	for range 2 {
		st, err := Open(ctx, state, ws)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		stores = append(stores, st)
	}
	call := func(st *Store, scope Scope, rel, body string) {
		t.Helper()
		c, err := st.Begin(ctx, CallInfo{Tool: "t"}, scope)
		if err != nil {
			t.Fatal(err)
		}
		if rel != "" {
			must(t, os.WriteFile(filepath.Join(ws, rel), []byte(body), 0o644))
		}
		if _, err := c.Finish(ctx); err != nil {
			t.Fatal(err)
		}
	}
	call(stores[0], Whole(), "", "")
	for i := range 6 {
		st, other := stores[i%2], stores[1-i%2]
		rel := []string{"a", "b"}[i/2%2]
		body := fmt.Sprint("v", i)
		call(st, File(rel), rel, body)
		if st.idxDelta.recs != i+1 {
			t.Fatalf("call %d: %d delta records, want %d", i, st.idxDelta.recs, i+1)
		}
		for j, s := range []*Store{st, other} {
			ix, err := s.loadIndex()
			if err != nil {
				t.Fatal(err)
			}
			if e := ix.entries[rel]; e == nil || e.Hash != hashOf(body) {
				t.Fatalf("call %d: store %d's manifest has %s = %+v, want %q", i, j, rel, e, body)
			}
		}
	}
}

// TestDeltaManifestBlob: a checkpoint and a background job keep the
// manifest as a blob (the index file hard-linked); with delta records
// pending it is saved whole first, so the blob holds the updates.
func TestDeltaManifestBlob(t *testing.T) {
	ctx := context.Background()
	ws, state := t.TempDir(), t.TempDir()
	must(t, os.WriteFile(filepath.Join(ws, "a"), []byte("a0"), 0o644))
	st, err := Open(ctx, state, ws)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	write := func(body string) {
		t.Helper()
		c, err := st.Begin(ctx, CallInfo{Tool: "Write"}, File("a"))
		if err != nil {
			t.Fatal(err)
		}
		must(t, os.WriteFile(filepath.Join(ws, "a"), []byte(body), 0o644))
		if _, err := c.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		if st.idxDelta.recs == 0 {
			t.Fatal("a file-scoped call wrote no delta record")
		}
	}
	blobHas := func(what, h, body string) {
		t.Helper()
		data, err := st.readBlob(h)
		if err != nil {
			t.Fatal(err)
		}
		m, err := decodeIndex(data)
		if err != nil {
			t.Fatal(err)
		}
		if e := m.entries["a"]; e == nil || e.Hash != hashOf(body) {
			t.Fatalf("%s: the manifest blob has a = %+v, want %q", what, e, body)
		}
	}
	if _, err := st.Checkpoint(ctx, "first", CallInfo{}); err != nil {
		t.Fatal(err)
	}
	write("a1")
	cp, err := st.Checkpoint(ctx, "second", CallInfo{})
	if err != nil {
		t.Fatal(err)
	}
	blobHas("checkpoint", cp.Manifest, "a1")
	write("a2")
	d, err := st.BeginDetached(ctx, CallInfo{Tool: "Bash"})
	if err != nil {
		t.Fatal(err)
	}
	blobHas("background job", d.rec.Manifest, "a2")
	if _, err := d.Finish(ctx); err != nil {
		t.Fatal(err)
	}
}
