//go:build linux

package e2e

// Folded and multi-term searches on inputs that would make a naive scan
// quadratic: a page completes, finds what it must, and a long search stops
// when the client cancels it.

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// zeroPage is n bytes of lines of 255 '0's: a folded 256-byte term of '0's
// almost matches at every byte.
func zeroPage(n int) []byte {
	line := append(bytes.Repeat([]byte("0"), 255), '\n')
	return bytes.Repeat(line, n/len(line))
}

// ababPage is n bytes of lines of 4095 bytes of "abab...".
func ababPage(n int) []byte {
	line := append(bytes.Repeat([]byte("ab"), 2047), 'a', '\n')
	return bytes.Repeat(line, n/len(line))
}

// craftedTerms are 16 terms of 256 bytes of "abab..." with one byte changed
// near the end of each: all their bytes are common in ababPage, and each
// agrees with it for ~250 bytes at every other offset.
func craftedTerms() []any {
	var terms []any
	for i := range 16 {
		b := bytes.Repeat([]byte("ab"), 128)
		k := len(b) - 1 - i
		b[k] = "ba"[k%2]
		terms = append(terms, string(b))
	}
	return terms
}

// adversarialSearches are the two inputs as search_text arguments
// over a 4 MiB page, and the case-sensitive one-term search over the same
// bytes they are measured against.
var adversarialSearches = []struct {
	name      string
	page      func(int) []byte
	args, ref func() map[string]any
}{
	{"zeros-folded", zeroPage,
		func() map[string]any {
			return map[string]any{"query": strings.Repeat("0", 256), "case_insensitive": true}
		},
		func() map[string]any { return map[string]any{"query": strings.Repeat("0", 256)} }},
	{"abab-16-terms", ababPage,
		func() map[string]any { return map[string]any{"any_of": craftedTerms()} },
		func() map[string]any { return map[string]any{"query": craftedTerms()[0]} }},
	{"abab-16-terms-folded", ababPage,
		func() map[string]any { return map[string]any{"any_of": craftedTerms(), "case_insensitive": true} },
		func() map[string]any { return map[string]any{"query": craftedTerms()[0]} }},
}

// TestSearchTextAdversarialPage: each adversarial search over a 4 MiB page
// (the default --max-scan-bytes) answers, and finds the one line that
// matches, placed after the page; search_files finds the one path among
// names made of the same bytes.
func TestSearchTextAdversarialPage(t *testing.T) {
	for _, tc := range adversarialSearches {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args()
			var hit string
			if q, ok := args["query"].(string); ok {
				hit = q
			} else {
				hit = args["any_of"].([]any)[5].(string)
			}
			if args["case_insensitive"] == true {
				hit = strings.ToUpper(hit)
			}
			body := append(tc.page(4<<20), "x"+hit+"x\n"...)
			root := tree(t, map[string]string{"page.txt": string(body)})
			cs := worker(t, root, "--include", "**")
			start := time.Now()
			got, pages, _ := searchAll(t, cs, args, 1<<20)
			t.Logf("%d pages in %v", pages, time.Since(start))
			sameHits(t, got, []textHit{{"page.txt", bytes.Count(body, []byte("\n")), wantEvidence("x" + hit + "x")}})

			// search_files: directory names of the page's bytes, shorter
			// than the terms, and one file named by a term's last 200
			// bytes (a name is at most 255).
			files := map[string]string{}
			dir := string(tc.page(4 << 10)[:199])
			for i := range 40 {
				files[dir+"/"+dir[:50]+"/f"+strconv.Itoa(i)] = ""
			}
			want := dir + "/hit/" + hit[len(hit)-200:]
			files[want] = ""
			root = tree(t, files)
			if q, ok := args["query"].(string); ok {
				args["query"] = q[len(q)-200:]
			} else {
				terms := args["any_of"].([]any)
				for i := range terms {
					terms[i] = terms[i].(string)[len(terms[i].(string))-200:]
				}
			}
			cs = worker(t, root, "--include", "**")
			r := ok(t, cs, "search_files", args)
			ps := items[struct{ Path string }](t, r)
			if len(ps) != 1 || ps[0].Path != want {
				t.Fatalf("search_files found %d paths, want only the hit", len(ps))
			}
		})
	}
}

// TestSearchTextCancelled: a folded adversarial search over 2 GiB (one 1
// GiB file under 2 names, in one page, each name a scan of seconds) is
// cancelled by the client
// (notifications/cancelled, from the go-sdk client's context); the worker
// stops scanning (its CPU time stops growing) and answers the next call at
// once.
func TestSearchTextCancelled(t *testing.T) {
	root := t.TempDir()
	first := filepath.Join(root, "z00.txt")
	f, err := os.Create(first)
	if err != nil {
		t.Fatal(err)
	}
	chunk := zeroPage(4 << 20)
	for range (1 << 30) / len(chunk) {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 2; i++ {
		if err := os.Link(first, filepath.Join(root, "z"+strconv.Itoa(100+i)+".txt")); err != nil {
			t.Fatal(err)
		}
	}
	cs, cmd := workerProc(t, nil, nil, root, "--include", "**",
		"--max-scan-bytes", strconv.Itoa(4<<30), "--max-file-bytes", strconv.Itoa(1<<30))
	pid := cmd.Process.Pid

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_text", Arguments: map[string]any{
			"query": strings.Repeat("0", 256), "case_insensitive": true}})
		done <- err
	}()
	base := procCPU(t, pid)
	deadline := time.Now().Add(20 * time.Second)
	for procCPU(t, pid)-base < 300*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatal("the search did not start scanning within 20 s")
		}
		select {
		case err := <-done:
			t.Fatalf("the 2 GiB search ended before it was cancelled: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled call returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled call did not return")
	}
	time.Sleep(100 * time.Millisecond) // the cancellation crosses the pipe
	before := procCPU(t, pid)
	time.Sleep(time.Second)
	used := procCPU(t, pid) - before
	t.Logf("CPU in the second after: %v", used)
	if used > 300*time.Millisecond {
		t.Fatalf("the worker used %v of CPU in the second after the cancellation: it is still scanning", used)
	}
	start := time.Now()
	ok(t, cs, "list_directory", map[string]any{})
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the next call took %v", d)
	}
}

// workerProc starts the worker (under the command prefix wrap, if any) with
// env and returns its session and process.
func workerProc(t testing.TB, env, wrap []string, root string, args ...string) (*mcp.ClientSession, *exec.Cmd) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	argv := append(append(append([]string{}, wrap...), workerBin, "--root", root), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append([]string{}, env...)
	cmd.Stderr = &testWriter{t: t}
	c := mcp.NewClient(&mcp.Implementation{Name: "fsmcp-e2e", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect %v: %v", argv, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, cmd
}

// procCPU is the CPU time (user and system) the process pid has used.
func procCPU(t testing.TB, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command name, which is in parentheses: state is
	// the first, utime the 12th, stime the 13th (in clock ticks, 100/s).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	ticks := 0
	for _, s := range f[11:13] {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("/proc/%d/stat: %q", pid, b)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}
