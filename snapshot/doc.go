// Package snapshot records every change an agent's tool call makes to a
// workspace, so that a person can see it, undo one call, or roll the
// workspace back to just before any call.
//
// It owns a content-addressed blob store, manifests of the workspace tree,
// a stat cache that makes re-scans incremental, change capture from the
// kernel's reports (so a scan costs what changed, not the tree), and a
// journal with one entry per mutating call. It knows nothing of containers
// or tools: callers bracket whatever they run with [Store.Begin] and
// [Call.Finish].
//
// # Using it
//
//	st, err := snapshot.Open(ctx, cfg.WorkspaceStateDir(), cfg.Workspace)
//	call, err := st.Begin(ctx, snapshot.CallInfo{Session: s, Tool: "Bash", Summary: cmd}, snapshot.Whole())
//	... run the command ...
//	entry, err := call.Finish(ctx) // or call.Abort(ctx) when nothing ran
//
// For single-file tools (Write, Edit, MultiEdit) use [File](path) as the
// scope: only the pre-image of that file (and of parent directories the
// tool may create) is taken, which costs one stat and one read, and the
// manifest is updated for those paths only (see Promises).
//
// # Concurrent calls
//
// Two flocks (so they also exclude other processes) order the calls on
// one workspace: the store lock, held by whatever reads or changes the
// store, and the shell lock, held by whatever scans the whole workspace.
//
//   - A file-scoped call holds the store lock from Begin to Finish or
//     Abort: the pre-image, the tool's one write and the capture after it.
//     File-scoped calls, undo, rollback and GC are therefore ordered among
//     themselves, and never wait for a running shell command.
//   - A whole-workspace call (a shell command: Bash, `agentbox exec`)
//     holds the shell lock from Begin to Finish or Abort, and the store
//     lock only while it scans: the pre-scan in Begin and the post-scan
//     and commit in Finish. Two shell commands on one workspace
//     serialize; a Write, an Edit, an undo do not wait for one.
//   - Every other whole-workspace scan takes the shell lock too, briefly:
//     a background job's start and end (BeginDetached, [Detached.Finish]),
//     a checkpoint, and recovery of a dead whole-workspace call (tried
//     without waiting; deferred to a later lock while a command runs). A
//     scan cannot tell a running command's writes from anyone else's, so
//     none but the command's own runs while it runs.
//   - History and diff (List, Get, Diff) read committed entries without
//     any lock: they never wait.
//
// The shell lock is always taken before the store lock, never waited for
// while holding it (lock.go gives the whole order, the in-process
// mutexes included). Begin and Finish wait for the locks until their ctx is
// done. [WithSerialCalls] (config snapshot.serial_calls) makes a
// whole-workspace call hold the store lock from Begin to Finish as
// well, as before: every mutating call then waits for a running command.
//
// # Attribution
//
// The journal stays exact with concurrent calls; the rule:
//
//   - A file-scoped call's entry holds its path (and the missing parents
//     it created) from the state its Begin saw to the state its Finish
//     saw. Nothing else can write in between but a running shell command:
//     such a write to the same path, in the milliseconds of the tool's own
//     write, is indistinguishable from the call's and is journaled as the
//     call's (two writers raced on one file; the entry still holds exactly
//     the states the path went from and to).
//   - A shell call's entry holds its post-scan diff, except that for a
//     path an entry committed while it ran (a file-scoped call, an undo, a
//     rollback) also changed, it records only the change from the state
//     the last of those entries left to the post-scan state, or nothing
//     when they are equal. A change the command made to such a path
//     before the first of those entries or between two of them is in no
//     entry (the other entry starts from the command's version); the path
//     is listed in the shell entry's Overlapped.
//   - So no entry holds another call's change; each entry's changes start
//     where the journal's previous change to that path ended, except at
//     paths a later shell entry lists as Overlapped. Undoing an entry
//     sets only its own paths back, to the states its call started from:
//     undoing a shell entry never reverts a Write made while it ran, and
//     undoing that Write never reverts the command's later change (it
//     conflicts with it, as with any later change).
//   - The entry of a shell call whose command ran while other entries
//     were journaled gets a new ID when it is committed ([Call.ID] reports
//     it after Finish), so that it sorts after them.
//
// Protected paths ([WithProtection]) are judged per call against the
// workspace as it is after the call: the configured protection computes
// the host-run closure then (config.Closure), and paths judged by content
// ([WithContentProtection]: package.json's hook-relevant keys, a rebase
// todo list's exec lines) compare the old content from the blob store
// with the new. A second round judges what is left after the first
// reverted something (a reverted change can bring a trigger back).
//
// A protected path (WithProtection) that a running command changed is
// set back to its last journaled state before a file-scoped call, undo or
// rollback takes it over (see Protected): it never becomes the state an
// entry starts from, so undo cannot bring back what no guard judged.
//
// Changes a person makes while a shell command runs are taken for the
// command's, as before. Containment is untouched: the rule only decides
// which entry a change is recorded in; every change is captured.
// TestConcurrentAttribution checks the rule against a model of random
// concurrent interleavings.
//
// A command that outlives its tool call (a background job) uses
// BeginDetached instead: the pre-scan is taken under the lock, which is
// then released; Detached.Finish re-takes it when the job ends and
// journals the job's changes as one entry by the same rule (see [Detached]
// for crash recovery of an open one). A foreground shell call is such a
// detached call that also holds the shell lock while it runs. While a
// background job of this process is open, a store opened WithProtection
// reverts changes to protected paths as they happen (the live guard,
// jobguard.go): within milliseconds with the change capture's watcher,
// within about half a second by polling without one, never while a
// foreground shell command runs (its own return judges them then).
//
// # Promises
//
//   - Blobs are named by the SHA-256 of their content (the standard
//     library's, which uses the SHA-NI instructions on amd64: hashing is a
//     small part of a scan next to reading and writing files), written to
//     a temporary file and renamed into place, deduplicated, optionally
//     deflate-compressed ([WithCompression]; manifests and large journal
//     entries always are). A journal entry is written to a temporary
//     file; it and the new blobs it references are made durable together
//     (concurrent fsyncs of each and of their directories, which share the
//     file system's journal commits, or one syncfs when there are many);
//     only then is the entry renamed into place: that rename is the commit
//     point, and its directory is fsynced before the call's pending record
//     is removed. A crash (SIGKILL or power loss) at any moment leaves
//     either no entry or a complete one whose blobs are all there.
//   - A call's pending record (what recovery completes) is durable before
//     the tool changes anything: a new record is renamed into place
//     complete, then it and its directory are fsynced together. Begin
//     waits for that, except for a Staged single-file call ([Scope].Staged),
//     whose caller stages the change (the sandbox's init writes and
//     fsyncs a temporary file) while the fsyncs run and makes it visible
//     only once [Call.Durable] returned nil; Finish and Abort wait for them
//     too. A call that would create a missing parent directory is never
//     Staged. Only a power loss before those fsyncs end can leave the
//     record partial or missing, and then nothing of its call was visible
//     under its own name (a staged write's temporary file may remain);
//     recovery discards the record. docs/gated-writes.md describes the
//     whole write, from the tool to the sandbox.
//   - A call interrupted by a crash is found the next time the store is
//     locked (for a whole-workspace call: while no shell command runs):
//     its changeset is computed then and journaled with Interrupted set; an interrupted undo or rollback is re-applied (it is
//     idempotent) and journaled.
//   - Scans never follow symlinks (directories are opened with
//     RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), record FIFOs, sockets and
//     devices without reading them, hash only files whose stat (size,
//     mtime, ctime, inode, mode) changed, and re-hash files whose mtime fell
//     in the same second as the scan that recorded them (racy, like git).
//   - Restores never follow a symlink, in any component of any path:
//     every directory is opened with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS
//     and every change is made on a final name relative to such a
//     descriptor (mkdirat, unlinkat, renameat, symlinkat, openat with
//     O_CREAT|O_EXCL|O_NOFOLLOW, fchown/fchmod on descriptors). A parent
//     that is now a symlink or a file is a conflict; with force the link
//     itself (never its target) is removed and a directory made. A
//     restore changes only the paths of its plan and the missing parents
//     it must create. A file that exists is replaced by writing a
//     temporary name, giving it its owner, mode and mtime and renaming it
//     over the old path (a missing one is written in place); file↔dir and
//     file↔symlink swaps, empty directories, owners (when running as
//     root; records without an owner get the workspace root's), modes,
//     mtimes and deletions are handled; blob content is streamed and
//     verified against its hash. The plan is made durable before the
//     first change, so an interrupted restore is completed by recovery.
//   - The manifest of the last scan (the file "index": path → type, mode,
//     size, mtime, hash, link target, with the stat fields of the stat
//     cache) is a cache: it is what the next scan is diffed against, and
//     a damaged one costs a full re-hash. A whole-workspace scan rewrites
//     it whole; a file-scoped call, an undo or a rollback appends one
//     record with the entries of the paths it changed to "index.delta"
//     beside it, so that its cost follows those paths, not the tree
//     (delta.go). The delta names the index it extends (by the index's
//     SHA-256) and is folded into a whole save once it passes a quarter of
//     the index. Each record carries its length and a CRC-32C; a record
//     that does not check out (torn by a crash in an append) ends the
//     replay, leaving the manifest an earlier call left, and the next
//     update saves the whole manifest instead of appending. Both files
//     are written without fsync and made durable by the next sync, which
//     every commit does: the manifest an entry leaves is durable before
//     the next entry commits. A whole call's or checkpoint's manifest
//     blob is the index file itself (hard-linked), so those save it whole
//     first when records are pending.
//   - Excludes ([WithExclude]) are the only paths not recorded; the default is
//     to exclude nothing.
//   - The store cannot fill the host's disk unnoticed: a per-call cap on
//     new content ([WithMaxCallBytes]) and a free-space floor
//     ([WithMinFreeBytes]) refuse a call before it runs ([ErrTooLarge],
//     [ErrNoSpace], as a *[LimitError]) rather than let it run without its
//     pre-images; content a call wrote past them is recorded by hash but
//     not kept ([Node].Unstored). GC runs automatically when the store
//     passes its size limit ([WithAutoGC]), from a running size, without
//     walking the store on every call. See limits.go.
//
// # Change capture
//
// A whole-workspace call scans before and after it runs; the difference is
// its changeset. With [WithChangeCapture]([CaptureAuto]) (config
// snapshot.change_capture: auto, the default of [OpenConfig]) and
// CAP_SYS_ADMIN, the store starts a watcher when it opens: a fanotify
// group with FAN_REPORT_DFID_NAME|FAN_REPORT_FID and a FAN_MARK_FILESYSTEM
// mark on the workspace's filesystem (watch_linux.go). Every event names a
// directory by file handle plus an entry name; the handle is resolved with
// open_by_handle_at (cached per directory until any directory is renamed
// or removed) and events outside the workspace are dropped (the mark
// covers the whole disk, the store's own state dir included). A scan then
// re-examines only the paths reported since the previous scan
// (incremental.go): lstat, and a read only when the stat changed, as the
// full scan does; a directory new at its path (created, moved in, or a
// different inode) is walked whole; a path that is gone is dropped with
// everything beneath it; other names of a hard-linked file are looked at
// with it; entries a full scan would look at anyway (racy mtimes,
// unreadable or unstored content) are too. The result is the manifest a
// full scan returns, byte for byte (TestIncrementalMatchesFullScan,
// FuzzIncrementalScan), and the changeset is computed from the paths
// looked at only. The one cost that grows with the tree, a copy of the
// manifest map for a scan that changed something, is made in the
// background after the previous scan (while the command runs or the agent
// thinks), so a scan takes a ready copy.
//
// The barrier: the kernel queues an event inside the writer's system
// call, and a file written through a shared mapping raises CLOSE_WRITE when
// the last reference goes (at the latest when the process exits). So once
// a command's processes have exited, reading the fanotify descriptor until
// EAGAIN, which every scan does first, collects everything the command did
// (TestCaptureBarrier). Changes made between calls (a person's edits) are
// reported too and are taken by the next pre-scan as its starting point,
// exactly as a full pre-scan takes them.
//
// Other consumers can follow the workspace's directory entries through
// the same watcher ([Store.EntryChanges], entries.go): each subscription
// collects the paths created, removed or moved in or out since it last
// took them, drains the queue before it answers (so a change whose system
// call returned before Take is in it) and reports lost on anything the
// watcher could not vouch for (overflow, unresolvable handle, the
// workspace moved, the store closed, more than 200,000 paths held). The
// sandbox keeps its set of workspace unix sockets current with it
// (docs/ipc-boundary.md).
//
// The watcher vouches for nothing it did not see. A scan is incremental
// only from an index this store produced while its watcher ran (or a clone
// of one, as file-scoped calls and restores make), with no queue overflow,
// no unresolvable handle, the workspace still at its path and no mount
// beneath it since; anything else (an index another process wrote, the
// first scan after opening, more changed paths than half the tree) is a
// full scan, which becomes the new base. Every 100 incremental scans or 10
// minutes ([WithCaptureCheck]) one is checked against a full scan, which
// judges racy mtimes by the incremental scan's moment (else a second
// boundary passing between the two would flag a racy file as a
// difference); a mismatch is logged with the paths, counted ([CaptureStats],
// and the store's capture.json for `agentbox doctor`) and the full result
// is used.
//
// Why fanotify: a recursive inotify watch needs a watch per directory
// (max_user_watches is 192536 here, 128 instances per user) and races with
// directories created before their watch is added; a per-call overlayfs
// whose upper layer is the changeset cannot work on a live workspace (a
// lower layer must not change while mounted, yet file-scoped calls and the
// person's edits change it concurrently; copy-up costs a full copy of
// every file touched; hard links lose their identity across layers).
// fanotify's mount marks cannot report directory-entry events and miss
// writes made through a container's bind mount; the filesystem mark sees
// both. Limits: it needs CAP_SYS_ADMIN (without it every scan is full);
// it watches one filesystem, so a mount beneath the workspace turns it
// off; the watcher reads every event of the disk (a cached map lookup for
// most; see the README for its cost during a build elsewhere); removing
// or renaming a directory costs one pass over the in-memory manifest.
//
// # Journal
//
// The journal holds one entry per call, undo, rollback and checkpoint.
// Changes made outside any call (by a person, between calls) are not
// entries of their own: the next call's scan takes them as its starting
// point, and a checkpoint records them as its changes.
//
// Entry IDs are decimal sequence numbers, zero-padded to six digits
// ("000042"), so they sort as strings and are short to type; Get (and so
// Diff, Undo and Rollback) accepts "42" too. Undo of an entry writes a new
// entry (Kind "undo", Reverts = that ID) whose changeset is the reverse, so
// undoing an undo is a redo. Undo("") reverts the newest entry that changed something and has
// not been undone. Rollback(to) restores every path changed by entries
// from `to` onwards to its state just before `to`; paths no entry touched
// are left alone.
//
// A *[Store] is safe for concurrent use; a *[Call] belongs to one goroutine.
// Close a store opened with change capture to stop its watcher.
package snapshot
