package bench

import (
	"slices"
	"time"
)

// pct is the nearest-rank percentile p (0–100) of d in milliseconds.
func pct(d []time.Duration, p int) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := (p*len(s)+99)/100 - 1
	i = max(0, min(i, len(s)-1))
	return float64(s[i].Microseconds()) / 1000
}

// lowerPct is the p-th percentile (0–100) of ds in milliseconds, taken at
// the lower rank (index ⌊(n-1)·p/100⌋): the tools and toolchains rows'
// definition.
func lowerPct(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p / 100)
	return float64(s[i]) / float64(time.Millisecond)
}

// median is the middle of ds (the upper one of an even count).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// timeN runs before (untimed; nil for nothing) then fn (timed) n times and
// returns fn's durations; the first error ends it.
func timeN(n int, before, fn func() error) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for range n {
		if before != nil {
			if err := before(); err != nil {
				return nil, err
			}
		}
		start := time.Now()
		if err := fn(); err != nil {
			return nil, err
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}
