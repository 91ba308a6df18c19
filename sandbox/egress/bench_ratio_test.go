package egress

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"
)

// BenchmarkEgress is `make bench`'s egress row: the same downloads made
// directly and through the relay (the code `agentbox init` runs) and the
// proxy, interleaved in one run so both see the same machine load, and
// printed as ratios against the targets: bulk throughput through
// the proxy >= 0.8x direct, and <= 2 ms added per new connection (p50).
// Each iteration is one round: bulkPairs 32 MiB downloads and connPairs
// small requests each way, every request on a new connection.
func BenchmarkEgress(b *testing.B) {
	const bulkPairs, connPairs = 4, 100
	body := make([]byte, 32<<20)
	bd, bp, bu := benchEnv(b, body)
	cd, cp, cu := benchEnv(b, []byte("ok"))
	var bulkDirect, bulkProxy time.Duration
	var connDirect, connProxy []time.Duration
	rounds := 0
	for b.Loop() {
		rounds++
		for range bulkPairs {
			bulkDirect += timedGet(b, bd, bu, len(body))
			bulkProxy += timedGet(b, bp, bu, len(body))
		}
		for range connPairs {
			connDirect = append(connDirect, timedGet(b, cd, cu, 2))
			connProxy = append(connProxy, timedGet(b, cp, cu, 2))
		}
	}
	mb := float64(len(body)) * float64(rounds*bulkPairs) / 1e6
	direct, proxied := mb/bulkDirect.Seconds(), mb/bulkProxy.Seconds()
	pd, pp := median(connDirect), median(connProxy)
	added := float64(pp-pd) / float64(time.Millisecond)
	b.ReportMetric(direct, "direct-MB/s")
	b.ReportMetric(proxied, "proxy-MB/s")
	b.ReportMetric(proxied/direct, "x_proxy/direct")
	b.ReportMetric(float64(pd)/float64(time.Millisecond), "direct-p50-ms")
	b.ReportMetric(float64(pp)/float64(time.Millisecond), "proxy-p50-ms")
	b.ReportMetric(added, "added-p50-ms")
	fmt.Printf("egress: 32 MiB HTTPS download, new connection: proxy %.0f MB/s vs host %.0f MB/s = %.2fx (target >= 0.8x: %s)\n",
		proxied, direct, proxied/direct, verdict(proxied/direct >= 0.8))
	fmt.Printf("egress: small HTTPS request, new connection, p50: proxy %.2f ms vs host %.2f ms = +%.2f ms (target <= 2 ms: %s)\n",
		float64(pp)/float64(time.Millisecond), float64(pd)/float64(time.Millisecond), added, verdict(added <= 2))
}

func timedGet(b *testing.B, c *http.Client, u string, size int) time.Duration {
	start := time.Now()
	resp, err := c.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if n != int64(size) {
		b.Fatalf("read %d of %d", n, size)
	}
	return time.Since(start)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "MISSED"
}
