package snapshot_test

import (
	"context"
	"testing"

	"github.com/agentbox/agentbox/snapshot"
	"github.com/agentbox/agentbox/snapshot/snapshottest"
)

func opener(opts ...snapshot.Option) snapshottest.Opener {
	return func(t testing.TB, stateDir, workspace string) *snapshot.Store {
		st, err := snapshot.Open(context.Background(), stateDir, workspace, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
}

func TestConformance(t *testing.T) {
	snapshottest.Run(t, opener())
}

func TestConformanceOneWorker(t *testing.T) {
	snapshottest.RunCases(t, opener(snapshot.WithWorkers(1)))
}
