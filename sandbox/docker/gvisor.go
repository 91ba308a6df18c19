package docker

import (
	"github.com/docker/docker/api/types/container"

	"github.com/agentbox/agentbox/config"
)

// Limits under gVisor (runsc).
//
// The host cgroup of a gVisor container holds the Sentry, its gofer and,
// on the ptrace platform, stub processes: about 50 host tasks and 12 MiB
// before the command starts, then about 9 host tasks and 1 MiB more per
// process of the command (measured with Debian's 2022 runsc). The
// container's own limits applied there would count gVisor rather than the
// command: a pids limit of 64 does not even let the Sentry start, and a
// memory or fork bomb would kill the whole sandbox instead of the
// command. So under gVisor the limits are enforced inside the Sentry,
// where the command's processes are counted:
//   - processes: RLIMIT_NPROC (the nproc ulimit), which the Sentry
//     enforces per uid, becomes min(nproc, pids_limit); the command and
//     init run as one uid, so pids_limit bounds them together as the pids
//     cgroup does under runc;
//   - memory: init enforces the limit itself (initproc, memwatch.go), from
//     the Sentry's accounting;
//
// and the host cgroup gets room for gVisor on top of them, as a backstop
// that still contains a bomb faster than init's watch.

// gvisorHostPids is the host pids limit under gVisor for pids_limit.
func gvisorHostPids(pids int64) int64 { return 64 + 10*pids }

// gvisorHostMemory is the host memory limit (bytes) under gVisor for a
// limit of mem bytes: the Sentry's own needs (its base, the stub processes
// of pids_limit processes, /tmp) and a margin for what grows between two
// polls of init's watch.
func gvisorHostMemory(mem int64, c config.Sandbox) int64 {
	return mem + (128+c.PidsLimit+c.TmpSizeMB)<<20
}

// gvisorResources rewrites the hardened resources for gVisor (see above).
func gvisorResources(res *container.Resources, c config.Sandbox) {
	mem := res.Memory
	res.Memory = gvisorHostMemory(mem, c)
	res.MemorySwap = res.Memory
	pids := gvisorHostPids(c.PidsLimit)
	res.PidsLimit = &pids
	for _, u := range res.Ulimits {
		if u.Name == "nproc" {
			u.Soft, u.Hard = min(c.NProc, c.PidsLimit), min(c.NProc, c.PidsLimit)
		}
	}
}
