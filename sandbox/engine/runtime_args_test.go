package engine

import (
	"os"
	"path/filepath"
	"testing"
)

// An engine whose runsc was registered without --host-uds=open (an older
// agentbox) is out of date: addRuntimeLive rewrites and reloads it.
func TestRuntimesCurrent(t *testing.T) {
	want := map[string]daemonRuntime{"runsc": {Path: "/usr/bin/runsc", RuntimeArgs: knownRuntimes["runsc"].args}}
	dir := t.TempDir()
	old := filepath.Join(dir, "old.json")
	os.WriteFile(old, []byte(`{"runtimes":{"runsc":{"path":"/usr/bin/runsc","runtimeArgs":["--network=none","--oci-seccomp"]}}}`), 0o600)
	cur := filepath.Join(dir, "cur.json")
	if err := writeDaemonConfig(cur, daemonConfig{Runtimes: want}); err != nil {
		t.Fatal(err)
	}
	if runtimesCurrent(old, want) {
		t.Error("runsc without --host-uds=open counts as current")
	}
	if !runtimesCurrent(cur, want) {
		t.Error("the config agentbox writes is not current")
	}
	if !runtimesCurrent(filepath.Join(dir, "missing.json"), want) {
		t.Error("a missing daemon.json is not ours to rewrite")
	}
}
