package sandboxtest_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/sandboxtest"
)

// The suite against the shared fake, in plain go test.
func TestFakeConformance(t *testing.T) {
	sandboxtest.Run(t, func(t *testing.T) (sandbox.Runner, string) {
		ws, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		r := sandboxtest.NewFake(ws)
		t.Cleanup(func() { r.Close(context.Background()) })
		return r, ws
	}, sandboxtest.WithoutIsolation())
}
