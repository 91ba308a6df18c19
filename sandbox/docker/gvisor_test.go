package docker

import "testing"

// TestContainerSpecGVisor: under gVisor the host cgroup gets room for
// the Sentry on top of the limits, and the pids limit moves inside it as
// the nproc ulimit.
func TestContainerSpecGVisor(t *testing.T) {
	r := testRunner(t, t.TempDir())
	_, plain := r.containerSpec(nil, nil)
	r.gvisor = true
	_, host := r.containerSpec(nil, nil)
	mem := r.cfg.EffectiveMemoryMB() << 20
	switch {
	case host.Memory <= mem || host.MemorySwap != host.Memory:
		t.Errorf("host memory %d (swap %d), want more than the limit %d", host.Memory, host.MemorySwap, mem)
	case host.PidsLimit == nil || *host.PidsLimit <= r.cfg.PidsLimit:
		t.Errorf("host pids limit %v, want more than %d", host.PidsLimit, r.cfg.PidsLimit)
	case plain.Memory != mem || *plain.PidsLimit != r.cfg.PidsLimit:
		t.Errorf("runc limits changed: %d %d", plain.Memory, *plain.PidsLimit)
	}
	nproc := int64(-1)
	for _, u := range host.Ulimits {
		if u.Name == "nproc" {
			nproc = u.Hard
			if u.Soft != u.Hard {
				t.Errorf("nproc soft %d hard %d", u.Soft, u.Hard)
			}
		}
	}
	if want := min(r.cfg.NProc, r.cfg.PidsLimit); nproc != want {
		t.Errorf("nproc %d, want %d", nproc, want)
	}
	for _, u := range plain.Ulimits {
		if u.Name == "nproc" && u.Hard != r.cfg.NProc {
			t.Errorf("runc nproc %d changed (the ulimits are shared?)", u.Hard)
		}
	}
}
