package docker_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/agentbox/agentbox/snapshot"
)

// BenchmarkSocketSet compares, in one run, the two ways the sandbox finds
// the unix sockets to mask at a hand-over, on a synthetic workspace of
// 20,000 directories: the remembering walk (one open and stat per
// directory) and the set kept current from the snapshot watcher's entry
// changes (what tools/workspace wires). Each op makes one socket in a
// different directory, then asks both; both must list it. Reported:
// walk-ms and feed-ms per hand-over, x_walk/feed their ratio, and
// statfloor-ms: one stat per directory by path and nothing else, the
// least any exact walk costs (a walk that skips unchanged directories
// still has to look at each). Needs root (fanotify).
func BenchmarkSocketSet(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("the snapshot watcher needs root (CAP_SYS_ADMIN)")
	}
	const top, per = 200, 99 // 200 + 200*99 = 20,000 directories
	ws := b.TempDir()
	var dirs []string
	for i := 0; i < top; i++ {
		for j := 0; j < per; j++ {
			d := filepath.Join(fmt.Sprintf("d%03d", i), fmt.Sprintf("e%02d", j))
			if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
				b.Fatal(err)
			}
			dirs = append(dirs, d)
		}
	}
	st, err := snapshot.Open(context.Background(), b.TempDir(), ws, snapshot.WithChangeCapture(snapshot.CaptureAuto))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ec, err := st.EntryChanges()
	if err != nil {
		b.Fatal(err)
	}
	defer ec.Close()
	subscribed := false
	var losses []string
	feed := func() (map[string]bool, bool) {
		paths, lost := ec.Take()
		if lost != "" && subscribed {
			losses = append(losses, lost)
		}
		if !subscribed { // as tools/workspace: the first call vouches for nothing
			subscribed = true
			return nil, false
		}
		return paths, lost == ""
	}
	fd, err := unix.Open(ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(fd)
	walk, fed := docker.NewSocketLister(nil), docker.NewSocketLister(feed)
	time.Sleep(1100 * time.Millisecond) // the walk trusts a directory changed over a second before it read it
	for _, l := range []*docker.SocketLister{walk, fed} {
		if _, err := l.Sockets(fd); err != nil {
			b.Fatal(err)
		}
	}
	var tWalk, tFeed, tStat time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rel := filepath.ToSlash(filepath.Join(dirs[(i*7919)%len(dirs)], fmt.Sprintf("s%d.sock", i)))
		ln, err := net.Listen("unix", filepath.Join(ws, rel))
		if err != nil {
			b.Fatal(err)
		}
		ln.(*net.UnixListener).SetUnlinkOnClose(false)
		ln.Close()
		for _, x := range []struct {
			l *docker.SocketLister
			t *time.Duration
		}{{walk, &tWalk}, {fed, &tFeed}} {
			t0 := time.Now()
			got, err := x.l.Sockets(fd)
			*x.t += time.Since(t0)
			if err != nil || !slices.Contains(got, rel) || len(got) != i+1 {
				b.Fatalf("op %d: %d sockets, %v; missing %s?", i, len(got), err, rel)
			}
		}
	}
	b.StopTimer()
	// The floor of any exact walk: one stat per directory, by path, no
	// open, no read (what skipping unchanged directories still costs).
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		var st unix.Stat_t
		for _, d := range dirs {
			if err := unix.Fstatat(fd, d, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				b.Fatal(err)
			}
		}
		tStat += time.Since(t0)
	}
	if len(losses) > 0 {
		// Fail closed, and counted in feed-ms: the watcher marks the
		// whole disk, so other processes' events can overflow it.
		b.Logf("the fed set walked %d more times: the watcher lost events: %q", fed.Walks()-1, losses)
	}
	n := float64(b.N)
	b.ReportMetric(float64(tWalk.Microseconds())/1000/n, "walk-ms")
	b.ReportMetric(float64(tFeed.Microseconds())/1000/n, "feed-ms")
	b.ReportMetric(float64(tStat.Microseconds())/1000/n, "statfloor-ms")
	b.ReportMetric(float64(fed.Walks()-1), "feed-walks")
	b.ReportMetric(float64(tWalk)/float64(tFeed), "x_walk/feed")
}
