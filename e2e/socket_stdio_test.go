//go:build linux

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSocketStdio: the worker and the supervisor serve over a stdin and a
// stdout that are blocking Unix socket pairs, as a Node.js host (Claude
// Desktop, VS Code) spawns them. The client sends many reads before it
// reads any answer, so the answers fill the stdout socket and the server's
// writes wait for room; every answer arrives whole, and the server ends
// when its stdin does.
func TestSocketStdio(t *testing.T) {
	body := strings.Repeat("a line of text read back whole over a socket\n", 300)[:12000]
	manifest, dir := exampleManifest(t, "reader-writer.yaml", "workspace", "outbox")
	writeFile(t, filepath.Join(dir, "workspace", "page.txt"), body)
	bins := buildSupervisorBins(t)
	for _, tc := range []struct {
		name, tool string
		args       []string
	}{
		{"worker", "read_text_file", []string{bins.worker, "--root", filepath.Join(dir, "workspace"), "--include", "**"}},
		{"supervisor", "reader_read_text_file", []string{bins.supervisor, "--manifest", manifest, "--worker", bins.worker}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(tc.args[0], tc.args[1:]...)
			in, out := startOnSockets(t, cmd)
			exited := make(chan struct{})
			var waitErr error
			go func() { waitErr = cmd.Wait(); close(exited) }()
			t.Cleanup(func() { cmd.Process.Kill(); <-exited })

			const calls = 48 // about 1.2 MB of answers, several times what the socket holds
			var reqs strings.Builder
			for id := 1; id <= calls; id++ {
				fmt.Fprintf(&reqs, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{%s,"name":%q,"arguments":{"path":"page.txt"}}}`+"\n", id, newMeta, tc.tool)
			}
			if _, err := in.Write([]byte(reqs.String())); err != nil {
				t.Fatal(err)
			}
			time.Sleep(200 * time.Millisecond) // the answers fill the socket meanwhile
			if err := out.SetReadDeadline(time.Now().Add(60 * time.Second)); err != nil {
				t.Fatal(err)
			}
			answers := bufio.NewReaderSize(out, 1<<16)
			seen := map[int]bool{}
			for range calls {
				line, err := answers.ReadBytes('\n')
				if err != nil {
					t.Fatalf("after %d answers: %v", len(seen), err)
				}
				var p struct {
					ID int `json:"id"`
					rawPage
				}
				if err := json.Unmarshal(line, &p); err != nil || p.Error != nil || p.Result.IsError {
					t.Fatalf("answer %d: %v %.300s", len(seen)+1, err, line)
				}
				var text strings.Builder
				for _, it := range p.Result.StructuredContent.Items {
					text.WriteString(it.Text)
				}
				if text.String() != body || p.Result.StructuredContent.NextCursor != nil {
					t.Fatalf("answer to %d: want the whole file in one page, got %d bytes in %d chunks", p.ID, text.Len(), len(p.Result.StructuredContent.Items))
				}
				seen[p.ID] = true
			}
			if len(seen) != calls {
				t.Fatalf("%d distinct answers to %d calls", len(seen), calls)
			}
			in.Close()
			select {
			case <-exited:
				if waitErr != nil {
					t.Fatalf("exit after stdin ended: %v", waitErr)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("still running 30 s after stdin ended")
			}
		})
	}
}

// BenchmarkSocketStdio: a 1-chunk read_text_file round trip with the
// worker's stdin and stdout blocking socket pairs, as a Node.js host
// spawns it; reference: the same calls to a worker on the same root over
// pipes, as the other benchmarks (and Go, Python and most hosts) spawn it.
func BenchmarkSocketStdio(b *testing.B) {
	body := strings.Repeat("0123456789abcdef fsmcp one-chunk page line\n", 24)[:1000] + "\n"
	root := tree(b, map[string]string{"page.txt": body})
	args := []string{"--root", root, "--include", "**"}
	sockets := startSocketWorker(b, args...)
	pipes := startRawWorker(b, args...)
	read := func(w *rawWorker) func() {
		return func() {
			p := w.call(b, "read_text_file", map[string]any{"path": "page.txt"})
			if items := p.Result.StructuredContent.Items; len(items) != 1 || items[0].Text != body {
				b.Fatalf("want the file in one chunk, got %d items", len(items))
			}
		}
	}
	n := benchRoundTrips()
	viaSockets, viaPipes := benchRepeat(n, read(sockets)), benchRepeat(n, read(pipes))
	viaSockets()
	viaPipes()
	var c benchClock
	b.ResetTimer()
	for i := range b.N {
		c.alternate(b, i, "pipes", viaPipes, viaSockets)
	}
	c.report(b)
	c.perOp(b, n, "ns/call")
}

// startSocketWorker is startRawWorker with socket pairs for stdin and
// stdout.
func startSocketWorker(b *testing.B, args ...string) *rawWorker {
	b.Helper()
	cmd := exec.Command(workerBin, args...)
	cmd.Env = []string{}
	in, out := startOnSockets(b, cmd)
	b.Cleanup(func() { in.Close(); cmd.Wait() })
	return &rawWorker{in: in, out: bufio.NewReaderSize(out, 1<<20), pid: cmd.Process.Pid}
}

// startOnSockets starts cmd with a blocking socket pair for each of its
// stdin and stdout, as a Node.js host does, and stderr to the test log; it
// returns the host's ends.
func startOnSockets(t testing.TB, cmd *exec.Cmd) (in, out *os.File) {
	t.Helper()
	in, childIn := socketPair(t)
	out, childOut := socketPair(t)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = childIn, childOut, &testWriter{t: t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	childIn.Close()
	childOut.Close()
	return in, out
}

// socketPair is a connected Unix stream socket pair, both ends blocking,
// as Node.js makes one for each of a child's stdin and stdout.
func socketPair(t testing.TB) (host, child *os.File) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The host's end is polled (so deadlines work); the child's stays
	// blocking, as a Node.js host leaves it.
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		t.Fatal(err)
	}
	host, child = os.NewFile(uintptr(fds[0]), "host"), os.NewFile(uintptr(fds[1]), "child")
	t.Cleanup(func() { host.Close(); child.Close() })
	return host, child
}
