//go:build linux

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// realServer is one way the real-tree tests reach a root: the worker
// alone, or the supervisor, whose tools carry the root's name.
type realServer struct {
	kind string // "worker" or "supervisor"
	cs   *mcp.ClientSession
	// prefix is what the tool names carry ("" or "<root>_").
	prefix string
	// pid is the worker process serving the root; stderr what it and its
	// supervisor wrote so far.
	pid    func() int
	stderr func() string
}

// realWorker starts the worker alone on root, serving everything.
func realWorker(t testing.TB, root string, args ...string) *realServer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.Command(workerBin, append([]string{"--root", root, "--include", "**"}, args...)...)
	cmd.Env = []string{}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "fsmcp-e2e", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect %s: %v\n%s", workerBin, err, stderr)
	}
	t.Cleanup(func() { cs.Close() })
	return &realServer{kind: "worker", cs: cs, pid: func() int { return cmd.Process.Pid }, stderr: stderr.String}
}

// supervisedRoot reaches the root named name of the supervisor p.
func supervisedRoot(t testing.TB, p *supervisorProc, name string) *realServer {
	return &realServer{kind: "supervisor", cs: p.session, prefix: name + "_",
		pid: func() int { return p.workerOf(t, name) }, stderr: p.stderr.String}
}

// realCallTimeout bounds one page: every page is answered within the call
// deadline (the supervisor's default call_timeout is 30s), so a call that
// takes this long is a hang.
const realCallTimeout = 25 * time.Second

// page calls tool once. A call that fails or does not answer in time ends
// the test with the worker's goroutines (see dumpAndFail).
func (s *realServer) page(t testing.TB, tool string, args map[string]any) *result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), realCallTimeout)
	defer cancel()
	began := time.Now()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: s.prefix + tool, Arguments: args})
	if err != nil {
		s.dumpAndFail(t, fmt.Sprintf("%s(%.300v) after %v: %v", tool, args, time.Since(began).Round(time.Millisecond), err))
	}
	r := &result{raw: res, isError: res.IsError}
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			r.text = tc.Text
		}
	}
	if res.StructuredContent != nil && !res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &r.page); err != nil {
			t.Fatalf("%s(%.300v): structuredContent %.300s: %v", tool, args, b, err)
		}
	}
	return r
}

// dumpAndFail ends the test after a call that failed or did not answer:
// it sends the worker SIGQUIT, so that it writes its goroutines to its
// stderr, and shows that.
func (s *realServer) dumpAndFail(t testing.TB, what string) {
	t.Helper()
	pid := s.pid()
	if err := syscall.Kill(pid, syscall.SIGQUIT); err != nil {
		t.Fatalf("%s through the %s; SIGQUIT to worker %d: %v", what, s.kind, pid, err)
	}
	time.Sleep(2 * time.Second) // the dump is written as the process exits
	t.Fatalf("%s through the %s; the worker's goroutines (SIGQUIT):\n%s", what, s.kind, s.stderr())
}

// pacing is how a traversal asks for its pages: each cursor passed back
// the moment its page arrives, or after random pauses.
type pacing struct {
	name string
	seed uint64 // 0: no pauses
}

var fullSpeed = pacing{name: "full speed"}

// pauses returns the pause before each next page: none at full speed;
// otherwise every eighth pause (the fourth, the twelfth, ...) lasts
// 510-700 ms, past the 500 ms for which the worker holds the scan it
// started for the next page (paging.Options.Hold), and of the others half are
// none, three in eight up to 40 ms, and one in eight 100-300 ms.
func (p pacing) pauses() func() time.Duration {
	if p.seed == 0 {
		return func() time.Duration { return 0 }
	}
	rng := rand.New(rand.NewPCG(p.seed, 43))
	ms := func(lo, hi int) time.Duration { return time.Duration(lo+rng.IntN(hi-lo+1)) * time.Millisecond }
	n := 0
	return func() time.Duration {
		n++
		switch r := rng.IntN(8); {
		case n%8 == 4:
			return ms(510, 700)
		case r < 4:
			return 0
		case r < 7:
			return ms(1, 40)
		}
		return ms(100, 300)
	}
}

// realResultCeiling is the worker's default --max-result-bytes.
const realResultCeiling = 48000

// realItem is an item of a paged tool: a list_directory entry, a
// search_files path or a search_text hit.
type realItem interface {
	comparable
	// hashed is what the item adds to its page's content_hash.
	hashed() string
}

func (e entryItem) hashed() string { return e.Kind + "\x00" + e.Path + "\n" }

func (h pathHit) hashed() string { return h.Path + "\n" }

func (h textHit) hashed() string {
	return h.Path + "\x00" + strconv.Itoa(h.Line) + "\x00" + h.Text + "\n"
}

// pathHit is one search_files item.
type pathHit struct {
	Path string `json:"path"`
}

// traversal is the outcome of paging one call to its end.
type traversal[T realItem] struct {
	items []T
	pages int
	took  time.Duration // from the first call to the last answer, pauses included
}

// followPages pages tool with args to the end through s, pausing as pace
// says. Every page must succeed, stay within the result ceiling and carry
// the content_hash of its items.
func followPages[T realItem](t testing.TB, s *realServer, tool string, args map[string]any, pace pacing) traversal[T] {
	t.Helper()
	a := map[string]any{}
	for k, v := range args {
		a[k] = v
	}
	pause := pace.pauses()
	var tr traversal[T]
	began := time.Now()
	for {
		r := s.page(t, tool, a)
		tr.pages++
		if r.isError {
			s.dumpAndFail(t, fmt.Sprintf("%s(%.300v), page %d, failed: %s", tool, args, tr.pages, r.text))
		}
		tr.items = append(tr.items, checkPage[T](t, tool, r, tr.pages)...)
		if r.page.NextCursor == nil {
			tr.took = time.Since(began)
			return tr
		}
		if tr.pages >= 100000 {
			t.Fatalf("%s(%.300v): no end after %d pages", tool, args, tr.pages)
		}
		a["cursor"] = *r.page.NextCursor
		time.Sleep(pause())
	}
}

// checkPage decodes the items of the n-th page of a traversal of tool,
// checking that the page is within the result ceiling and carries the
// content_hash of its items.
func checkPage[T realItem](t testing.TB, tool string, r *result, n int) []T {
	t.Helper()
	if b, _ := json.Marshal(r.raw); len(b) > realResultCeiling {
		t.Fatalf("%s page %d: %d bytes, over the result ceiling %d", tool, n, len(b), realResultCeiling)
	}
	items := make([]T, len(r.page.Items))
	h := sha256.New()
	for i, raw := range r.page.Items {
		if err := json.Unmarshal(raw, &items[i]); err != nil {
			t.Fatalf("%s page %d, item %s: %v", tool, n, raw, err)
		}
		h.Write([]byte(items[i].hashed()))
	}
	if want := "sha256:" + hex.EncodeToString(h.Sum(nil)); r.page.ContentHash != want {
		t.Fatalf("%s page %d: content_hash %s, its items give %s", tool, n, r.page.ContentHash, want)
	}
	return items
}

// sameItems fails the test unless got equals want, naming the first
// difference and counting what is missing and what is extra.
func sameItems[T comparable](t testing.TB, what string, got, want []T) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	count := func(xs []T) map[T]int {
		m := map[T]int{}
		for _, x := range xs {
			m[x]++
		}
		return m
	}
	g, w := count(got), count(want)
	var missing, extra []string
	for x, n := range w {
		if g[x] < n {
			missing = append(missing, fmt.Sprint(x))
		}
	}
	for x, n := range g {
		if w[x] < n {
			extra = append(extra, fmt.Sprint(x))
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	at := func(xs []T) string {
		if i < len(xs) {
			return fmt.Sprint(xs[i])
		}
		return "(end)"
	}
	t.Fatalf("%s: %d items, want %d; first difference at item %d: got %.300s, want %.300s\n%d missing (first: %.600s)\n%d extra or repeated (first: %.600s)",
		what, len(got), len(want), i, at(got), at(want), len(missing), strings.Join(first(missing, 5), " | "), len(extra), strings.Join(first(extra, 5), " | "))
}

func first(xs []string, n int) []string { return xs[:min(n, len(xs))] }
