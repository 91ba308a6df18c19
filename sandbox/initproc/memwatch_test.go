package initproc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestAnonBytes(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, meminfo string
		want          int64
		ok            bool
	}{
		{"gvisor", "MemTotal: 262144 kB\nMemFree: 238260 kB\nAnonPages: 22324 kB\nShmem: 20480 kB\n", 22324 << 10, true},
		{"missing", "MemTotal: 262144 kB\n", 0, false},
		{"garbled", "AnonPages: lots kB\n", 0, false},
		{"empty value", "AnonPages:\n", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name)
			if err := os.WriteFile(p, []byte(tc.meminfo), 0o644); err != nil {
				t.Fatal(err)
			}
			got, ok := anonBytes(p)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("anonBytes = %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
	if _, ok := anonBytes(filepath.Join(dir, "nonexistent")); ok {
		t.Fatal("a missing file read as ok")
	}
}

func TestLargestProcess(t *testing.T) {
	proc := t.TempDir()
	for pid, statm := range map[string]string{
		"1": "9000 8000 0 0 0 0 0", // init: never chosen
		"7": "300 120 0 0 0 0 0", "9": "900 450 0 0 0 0 0", "12": "100 50 0 0 0 0 0",
		strconv.Itoa(os.Getpid()): "99999 99999 0 0 0 0 0", // this process: never chosen
		"self":                    "5 5", "13": "garbled",
	} {
		must(t, os.MkdirAll(filepath.Join(proc, pid), 0o755))
		must(t, os.WriteFile(filepath.Join(proc, pid, "statm"), []byte(statm), 0o644))
	}
	must(t, os.MkdirAll(filepath.Join(proc, "14"), 0o755)) // exited meanwhile: no statm
	if got := largestProcess(proc); got != 9 {
		t.Fatalf("largestProcess = %d, want 9", got)
	}
	if got := largestProcess(filepath.Join(proc, "nonexistent")); got != 0 {
		t.Fatalf("largestProcess of nothing = %d", got)
	}
}

// TestMemWatchKills: over the limit, the watch kills the largest process
// and counts it.
func TestMemWatchKills(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pid := strconv.Itoa(cmd.Process.Pid)
	must(t, os.MkdirAll(filepath.Join(dir, "proc", pid), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "proc", pid, "statm"), []byte("100 90 0 0 0 0 0"), 0o644))
	meminfo := filepath.Join(dir, "meminfo")
	must(t, os.WriteFile(meminfo, []byte("AnonPages: 1024 kB\n"), 0o644))
	w := &memWatch{limit: 4 << 20, meminfo: meminfo, proc: filepath.Join(dir, "proc"), stop: make(chan struct{}), done: make(chan struct{})}
	go w.loop()
	time.Sleep(5 * memPoll)
	if w.kills.Load() != 0 {
		t.Fatal("killed under the limit")
	}
	must(t, os.WriteFile(meminfo, []byte("AnonPages: 8192 kB\n"), 0o644))
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("the largest process was not killed over the limit")
	}
	if n := w.finish(); n < 1 {
		t.Fatalf("kills = %d, want at least 1", n)
	}
}
