package tools

import (
	"context"
	"errors"
	"testing"
	"time"
)

// fakeDetachedSnap is a fakeSnap that also begins detached snapshots.
type fakeDetachedSnap struct {
	*fakeSnap
	detached int
}

func (f *fakeDetachedSnap) BeginDetached(ctx context.Context, info SnapshotInfo) (SnapshotCall, error) {
	f.mu.Lock()
	f.detached++
	f.mu.Unlock()
	return fakeSnapCall{f.fakeSnap, info}, nil
}

// attachJobs is a Jobs that keeps attached snapshots (JobSnapshots).
type attachJobs struct {
	JobSnapshots
}

func (*attachJobs) Start(context.Context, ExecRequest) (string, error) { return "job-1", nil }
func (*attachJobs) Read(context.Context, string) (JobStatus, error)    { return JobStatus{}, nil }
func (*attachJobs) Kill(context.Context, string) (JobStatus, error)    { return JobStatus{}, nil }

// plainJobs cannot take snapshots over.
type plainJobs struct{}

func (*plainJobs) Start(context.Context, ExecRequest) (string, error) { return "job-1", nil }
func (*plainJobs) Read(context.Context, string) (JobStatus, error)    { return JobStatus{}, nil }
func (*plainJobs) Kill(context.Context, string) (JobStatus, error)    { return JobStatus{}, nil }
func (*plainJobs) AttachSnapshot(string, SnapshotCall) bool           { return false }

type bgParams struct {
	Background bool `json:"background,omitempty"`
	Fail       bool `json:"fail,omitempty"`
}

func TestSnapshotStageDetached(t *testing.T) {
	bg := New("BG", func(ctx context.Context, env *Env, p *bgParams) (Result, error) {
		if p.Fail {
			return Result{}, Errorf(ErrValidation, "refused")
		}
		env.AttachJobSnapshot("job-1")
		return Result{Content: "started"}, nil
	}, WithKind(KindExecute), WithScope(func(p *bgParams) Scope {
		return Scope{Kind: ScopeWorkspace, Detached: p.Background}
	}))
	tests := []struct {
		name                             string
		params                           bgParams
		jobs                             Jobs
		detachedStore                    bool
		wantDetached, wantBegun          int
		wantFinish, wantAbort            int
		wantPending, wantJournalAfterEnd bool
	}{
		{name: "background job takes the snapshot", params: bgParams{Background: true}, jobs: &attachJobs{}, detachedStore: true,
			wantDetached: 1, wantPending: true, wantJournalAfterEnd: true},
		{name: "refused before starting: aborted", params: bgParams{Background: true, Fail: true}, jobs: &attachJobs{}, detachedStore: true,
			wantDetached: 1, wantAbort: 1},
		{name: "jobs cannot take it: finished now", params: bgParams{Background: true}, jobs: &plainJobs{}, detachedStore: true,
			wantDetached: 1, wantFinish: 1},
		{name: "store without detached calls: plain snapshot", params: bgParams{Background: true}, jobs: &attachJobs{},
			wantBegun: 1, wantFinish: 1},
		{name: "foreground call: plain snapshot", params: bgParams{}, jobs: &attachJobs{}, detachedStore: true,
			wantBegun: 1, wantFinish: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := &fakeSnap{}
			var store Snapshotter = fs
			ds := &fakeDetachedSnap{fakeSnap: fs}
			if tc.detachedStore {
				store = ds
			}
			c := &Call{ID: "c1", Session: NewSession("s", "/ws"), Name: "BG", Tool: bg, Params: &tc.params}
			h := SnapshotStage(store, nil)(func(ctx context.Context, c *Call) Result {
				env := &Env{Jobs: tc.jobs, Detached: c.Detached}
				res, err := bg.Run(ctx, env, c.Params)
				if err != nil {
					var te *ToolError
					if errors.As(err, &te) {
						res.Err = te
					}
				}
				return res
			})
			res := h(context.Background(), c)
			if ds.detached != tc.wantDetached || len(fs.begun) != tc.wantBegun || fs.finish != tc.wantFinish || fs.aborted != tc.wantAbort {
				t.Fatalf("detached %d begun %d finish %d abort %d", ds.detached, len(fs.begun), fs.finish, fs.aborted)
			}
			if (res.Meta["journal"] != nil) != tc.wantPending {
				t.Fatalf("meta %v", res.Meta)
			}
			if tc.wantBegun > 0 && tc.params.Background && !fs.begun[0].Detached {
				t.Fatalf("scope lost Detached: %+v", fs.begun[0])
			}
			if !tc.wantJournalAfterEnd {
				return
			}
			// The job ends: its snapshot is finished once.
			j := tc.jobs.(*attachJobs)
			var st JobStatus
			j.FinishJob(context.Background(), "job-1", &st)
			if fs.finish != 1 || st.Journal == nil || st.Journal.ID != "j-c1" {
				t.Fatalf("after the job ended: finish %d journal %+v", fs.finish, st.Journal)
			}
			if JobJournalNote(st) == "" {
				t.Fatal("no journal note")
			}
			j.FinishJob(context.Background(), "job-1", &st)
			j.FinishAll(context.Background())
			if fs.finish != 1 {
				t.Fatalf("finished %d times", fs.finish)
			}
		})
	}
}

// failingSnapCall fails its first Finish.
type failingSnapCall struct {
	fails, calls *int
}

func (f failingSnapCall) Finish(context.Context) (JournalEntry, error) {
	*f.calls++
	if *f.calls <= *f.fails {
		return JournalEntry{}, errors.New("disk full")
	}
	return JournalEntry{ID: "7"}, nil
}
func (failingSnapCall) Abort(context.Context) error { return nil }

// A finish that fails keeps the snapshot attached, so shutdown retries.
func TestJobSnapshotsRetry(t *testing.T) {
	fails, calls := 1, 0
	var j JobSnapshots
	j.AttachSnapshot("job-1", failingSnapCall{&fails, &calls})
	var st JobStatus
	j.FinishJob(context.Background(), "job-1", &st)
	if st.Journal != nil || st.JournalError == "" {
		t.Fatalf("first finish: %+v", st)
	}
	j.FinishAll(context.Background())
	if calls != 2 {
		t.Fatalf("finish calls %d, want 2", calls)
	}
	j.FinishAll(context.Background())
	if calls != 2 {
		t.Fatalf("finished again after success: %d", calls)
	}
}

// A job's snapshot is finished when the job exits, without a read; the
// next read reports the entry once.
func TestJobSnapshotsFinishOnExit(t *testing.T) {
	fs := &fakeSnap{}
	var j JobSnapshots
	j.AttachSnapshot("job-1", fakeSnapCall{fs, SnapshotInfo{CallID: "c1"}})
	exited := make(chan struct{})
	j.FinishOnExit(context.Background(), "job-1", exited)
	time.Sleep(20 * time.Millisecond)
	fs.mu.Lock()
	early := fs.finish
	fs.mu.Unlock()
	if early != 0 {
		t.Fatal("finished before the job exited")
	}
	close(exited)
	deadline := time.Now().Add(2 * time.Second)
	for {
		fs.mu.Lock()
		n := fs.finish
		fs.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not finished 2 s after the job exited (finish %d)", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	var st JobStatus
	j.FinishJob(context.Background(), "job-1", &st)
	if st.Journal == nil || st.Journal.ID != "j-c1" {
		t.Fatalf("read after exit: %+v", st)
	}
	var again JobStatus
	j.FinishJob(context.Background(), "job-1", &again)
	if again.Journal != nil || fs.finish != 1 {
		t.Fatalf("reported twice or finished again: %+v, finish %d", again, fs.finish)
	}
}
