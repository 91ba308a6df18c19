package snapshot

// Test hooks for the external tests.
var WithHook = withHook

var WithCallHook = withCallHook

func SetAtomicWriteHook(fn func()) { atomicWriteHook = fn }

var WithFreeSpace = withFreeSpace

var WithFullIndexSaves = withFullIndexSaves

var Resolve = resolveID
