package rootproc

import (
	"testing"
	"time"
)

func TestPolicy(t *testing.T) {
	ms := time.Millisecond
	type crash struct {
		at, up time.Duration // since the test's epoch; how long the worker was up
		delay  time.Duration
		failed bool
	}
	tests := []struct {
		name    string
		crashes []crash
	}{
		{"backoff doubles then fails on the sixth crash in a minute", []crash{
			{0, ms, 100 * ms, false},
			{time.Second, ms, 200 * ms, false},
			{2 * time.Second, ms, 400 * ms, false},
			{3 * time.Second, ms, 800 * ms, false},
			{4 * time.Second, ms, 1600 * ms, false},
			{5 * time.Second, ms, 0, true},
		}},
		{"backoff caps at 10s while crashes are spread out", []crash{
			{0, ms, 100 * ms, false},
			{20 * time.Second, ms, 200 * ms, false},
			{40 * time.Second, ms, 400 * ms, false},
			{60 * time.Second, ms, 800 * ms, false},
			{80 * time.Second, ms, 1600 * ms, false},
			{100 * time.Second, ms, 3200 * ms, false},
			{120 * time.Second, ms, 6400 * ms, false},
			{140 * time.Second, ms, 10 * time.Second, false},
			{160 * time.Second, ms, 10 * time.Second, false},
		}},
		{"a healthy minute resets the backoff", []crash{
			{0, ms, 100 * ms, false},
			{time.Second, ms, 200 * ms, false},
			{2 * time.Second, ms, 400 * ms, false},
			{70 * time.Second, 65 * time.Second, 100 * ms, false},
			{71 * time.Second, ms, 200 * ms, false},
		}},
		{"crashes older than the window do not count", []crash{
			{0, ms, 100 * ms, false},
			{ms, ms, 200 * ms, false},
			{2 * ms, ms, 400 * ms, false},
			{3 * ms, ms, 800 * ms, false},
			{4 * ms, ms, 1600 * ms, false},
			{61 * time.Second, ms, 3200 * ms, false},
		}},
	}
	epoch := time.Unix(1_000_000, 0)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p policy
			for i, c := range tc.crashes {
				delay, failed, _ := p.crash(epoch.Add(c.at), c.up)
				if failed != c.failed || (!failed && delay != c.delay) {
					t.Fatalf("crash %d: delay %s failed %v, want %s %v", i+1, delay, failed, c.delay, c.failed)
				}
			}
		})
	}
}
