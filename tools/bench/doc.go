// Package bench owns the measurements behind `agentbox bench`: each
// engine runs agentbox and its peers on this machine, in the same run,
// and returns rows a person or a script can compare as ratios.
//
//   - [Sandbox]: `true` through the warm pool against `docker exec`,
//     `docker run --rm`, bwrap, the pool under gVisor, and the engine alone
//     creating and removing plain containers.
//   - [Tools]: Grep and Glob against rg, a parallel batch of Reads against
//     the same batch serially, and Write and Edit through the whole
//     pipeline and the warm pool.
//   - [Toolchains]: go vet, go test and a parallel CPU job through the
//     Bash tool against native runs, cold and warm.
//   - [Load]: concurrent MCP sessions of mixed calls against a real
//     `agentbox mcp --http`, with the journal and the audit log read back
//     and checked call by call. The integration load test drives it too.
//   - [Snapshot]: the snapshot store against a shadow git repository, and
//     change capture with the fanotify watcher against full scans.
//
// A peer that cannot run on this machine (a tool not installed, a runtime
// not registered, a sandbox that cannot enter the workspace) is a row that
// says why, never the end of the whole bench; agentbox's own rows must run.
//
// The package sits beside the front ends in the tools layer: it drives the
// pipeline through [workspace.Open] as a front end does, and, to calibrate
// it, the layers below directly (the sandbox backend, the engine, the
// snapshot store). Imports point down only: cmd/agentbox → bench → tools,
// sandbox, snapshot → config; nothing but cmd/agentbox and the
// integration tests imports it. Text reports are written by the Write*
// functions; the row types are what `--json` prints.
package bench
