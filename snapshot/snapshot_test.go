package snapshot_test

import (
	"context"
	"fmt"
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

func TestRandomSeeds(t *testing.T) {
	seeds := 12
	if testing.Short() {
		seeds = 3
	}
	for seed := 2; seed < 2+seeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			snapshottest.RunRandom(t, opener(), uint64(seed), 40)
		})
	}
}

func TestConformanceCompressed(t *testing.T) {
	snapshottest.RunCases(t, opener(snapshot.WithCompression(true)))
	snapshottest.RunRandom(t, opener(snapshot.WithCompression(true)), 77, 30)
}
