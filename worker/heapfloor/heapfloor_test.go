package heapfloor

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	for _, tc := range []struct {
		live, headroom uint64
		base, want     int
	}{
		{live: 6 << 20, headroom: 8 << 20, base: 100, want: 140},  // 133.4, rounded up
		{live: 8 << 20, headroom: 8 << 20, base: 100, want: 100},  // as much as live
		{live: 4 << 20, headroom: 8 << 20, base: 100, want: 200},  // the minimum heap, 8 MiB, is below 12
		{live: 2 << 20, headroom: 8 << 20, base: 100, want: 250},  // capped: the minimum heap at 400 would be 16 MiB
		{live: 1 << 20, headroom: 8 << 20, base: 100, want: 230},  // capped: 225 makes the minimum 9 MiB
		{live: 1 << 20, headroom: 4 << 20, base: 100, want: 130},  // capped: 125 makes it 5 MiB
		{live: 40 << 20, headroom: 8 << 20, base: 100, want: 100}, // a large heap: base
		{live: 40 << 20, headroom: 8 << 20, base: 300, want: 300}, // never below base
		{live: 1 << 20, headroom: 1 << 20, base: 100, want: 100},  // headroom below the minimum: base
		{live: 0, headroom: 8 << 20, base: 100, want: 200},        // none live yet: no division by zero
	} {
		if got := Percent(tc.live, tc.headroom, tc.base); got != tc.want {
			t.Errorf("Percent(%d, %d, %d) = %d, want %d", tc.live, tc.headroom, tc.base, got, tc.want)
		}
	}
}

// TestStart: after a collection the percentage is the one Percent gives
// for the heap then live.
func TestStart(t *testing.T) {
	const headroom = 256 << 20
	Start(headroom)
	s := []metrics.Sample{{Name: percentMetric}, {Name: liveMetric}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		time.Sleep(20 * time.Millisecond) // the finalizer runs after the collection
		metrics.Read(s)
		got, live := int(s[0].Value.Uint64()), s[1].Value.Uint64()
		if want := Percent(live, headroom, 100); got == want {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("GOGC percent %d with %d bytes live, want %d", got, live, want)
		}
	}
}
