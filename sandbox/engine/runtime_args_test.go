package engine

import (
	"os"
	"path/filepath"
	"testing"
)

// An engine whose runsc was registered with --host-uds=open for every
// container, or without runsc-egress (an older agentbox), is out of date:
// addRuntimeLive rewrites and reloads it.
func TestRuntimesCurrent(t *testing.T) {
	want := map[string]daemonRuntime{
		"runsc":        {Path: "/usr/bin/runsc", RuntimeArgs: knownRuntimes["runsc"].args},
		"runsc-egress": {Path: "/usr/bin/runsc", RuntimeArgs: knownRuntimes["runsc-egress"].args},
	}
	if HostUDSOpen(want["runsc"].RuntimeArgs) || !HostUDSOpen(want["runsc-egress"].RuntimeArgs) {
		t.Fatalf("runsc must keep host sockets closed and runsc-egress open them: %+v", want)
	}
	dir := t.TempDir()
	old := filepath.Join(dir, "old.json")
	must(t, os.WriteFile(old, []byte(`{"runtimes":{"runsc":{"path":"/usr/bin/runsc","runtimeArgs":["--network=none","--oci-seccomp","--host-uds=open"]}}}`), 0o600))
	cur := filepath.Join(dir, "cur.json")
	if err := writeDaemonConfig(cur, daemonConfig{Runtimes: want}); err != nil {
		t.Fatal(err)
	}
	if runtimesCurrent(old, want) {
		t.Error("runsc with --host-uds=open and no runsc-egress counts as current")
	}
	if !runtimesCurrent(cur, want) {
		t.Error("the config agentbox writes is not current")
	}
	if !runtimesCurrent(filepath.Join(dir, "missing.json"), want) {
		t.Error("a missing daemon.json is not ours to rewrite")
	}
}

func TestHostUDSOpen(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--network=none"}, false},
		{[]string{"--host-uds=none"}, false},
		{[]string{"--host-uds=open"}, true},
		{[]string{"--host-uds=all"}, true},
		{[]string{"-host-uds=create"}, true},
		{[]string{"--host-uds", "open"}, true},
		{[]string{"--host-uds", "none"}, false},
	} {
		if got := HostUDSOpen(tc.args); got != tc.want {
			t.Errorf("HostUDSOpen(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}
