// Package snapshot records every change an agent's tool call makes to a
// workspace, so that a person can see it, undo one call, or roll the
// workspace back to just before any call.
//
// It owns a content-addressed blob store, manifests of the workspace tree,
// a stat cache that makes re-scans incremental, and a journal with one
// entry per mutating call. It knows nothing of containers or tools: callers
// bracket whatever they run with Begin and Finish.
//
// # Using it
//
//	st, err := snapshot.Open(ctx, cfg.WorkspaceStateDir(), cfg.Workspace)
//	call, err := st.Begin(ctx, snapshot.CallInfo{Session: s, Tool: "Bash", Summary: cmd}, snapshot.Whole())
//	... run the command ...
//	entry, err := call.Finish(ctx) // or call.Abort(ctx) when nothing ran
//
// For single-file tools (Write, Edit, MultiEdit) use snapshot.File(path) as
// the scope: only the pre-image of that file (and of parent directories the
// tool may create) is taken, which costs one stat and one read.
//
// Between Begin and Finish/Abort the Call holds an exclusive lock on the
// store (an flock, so it also excludes other processes): mutating calls on
// one workspace are serialised, which is what makes a whole-workspace
// changeset belong to exactly one call. Begin waits for the lock until its
// ctx is done.
//
// A command that outlives its tool call (a background job) uses
// BeginDetached instead: the pre-scan is taken under the lock, which is
// then released; Detached.Finish re-takes it when the job ends and
// journals the job's changes as one entry (see Detached for paths other
// calls changed meanwhile, and for crash recovery of an open one).
//
// # Promises
//
//   - Blobs are named by the SHA-256 of their content (the standard
//     library's, which uses the SHA-NI instructions on amd64: hashing is a
//     small part of a scan next to reading and writing files), written to
//     a temporary file and renamed into place, deduplicated, optionally
//     deflate-compressed (WithCompression; manifests and large journal
//     entries always are). A journal entry is written to a temporary
//     file; it and the new blobs it references are made durable together
//     (concurrent fsyncs of each and of their directories, which share the
//     file system's journal commits, or one syncfs when there are many);
//     only then is the entry renamed into place: that rename is the commit
//     point, and its directory is fsynced before the call's pending record
//     is removed. A crash (SIGKILL or power loss) at any moment leaves
//     either no entry or a complete one whose blobs are all there.
//   - A call's pending record (what recovery completes) is durable before
//     Begin returns, so before the tool changes anything: a new record is
//     renamed into place complete, then it and its directory are fsynced
//     together. Only a power loss before those fsyncs end can leave it
//     partial, and then its call had not started; recovery discards it.
//   - A call interrupted by a crash is found the next time the store is
//     locked: its changeset is computed then and journaled with
//     Interrupted set; an interrupted undo or rollback is re-applied (it is
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
//   - Excludes (WithExclude) are the only paths not recorded; the default is
//     to exclude nothing.
//   - The store cannot fill the host's disk unnoticed: a per-call cap on
//     new content (WithMaxCallBytes) and a free-space floor
//     (WithMinFreeBytes) refuse a call before it runs (ErrTooLarge,
//     ErrNoSpace, as a *LimitError) rather than let it run without its
//     pre-images; content a call wrote past them is recorded by hash but
//     not kept (Node.Unstored). GC runs automatically when the store
//     passes its size limit (WithAutoGC), from a running size, without
//     walking the store on every call. See limits.go.
//
// # Journal
//
// The journal holds one entry per call, undo, rollback and checkpoint.
// Changes made outside any call (by a person, between calls) are not
// entries of their own: the next call's scan takes them as its starting
// point, and a checkpoint records them as its changes.
//
// Entry IDs are decimal sequence numbers, zero-padded to six digits
// ("000042"), so they sort as strings and are short to type; Resolve
// accepts "42" too. Undo of an entry writes a new entry (Kind "undo",
// Reverts = that ID) whose changeset is the reverse, so undoing an undo is a
// redo. Undo("") reverts the newest entry that changed something and has
// not been undone. Rollback(to) restores every path changed by entries
// from `to` onwards to its state just before `to`; paths no entry touched
// are left alone.
//
// A *Store is safe for concurrent use; a *Call belongs to one goroutine.
package snapshot
