//go:build linux

package e2e

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsmcp/fsmcp/internal/jsonl"
)

// writeLine streams a write_text_file call whose content is n bytes of
// plain text to w, its id after the params (as the TypeScript SDK writes
// requests), so a refusal must find it at the end of the line.
func writeLine(w io.Writer, id int, tool string, n int) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	fmt.Fprintf(bw, `{"method":"tools/call","params":{%s,"name":"%s","arguments":{"path":"big.txt","content":"`, newMeta, tool)
	chunk := strings.Repeat("a", 1<<20)
	for sent := 0; sent < n; sent += len(chunk) {
		bw.WriteString(chunk[:min(len(chunk), n-sent)])
	}
	fmt.Fprintf(bw, "\"}},\"jsonrpc\":\"2.0\",\"id\":%d}\n", id)
	return bw.Flush()
}

// TestRequestMemoryBounded: with max_write_bytes at 16 MiB, a 95 MB
// write_text_file line is refused by the worker alone and by the
// supervisor while it is read (-32600, with its id), each process's peak
// memory growing by at most twice the largest request it accepts; the
// connection keeps serving, and a write of exactly the limit is taken.
func TestRequestMemoryBounded(t *testing.T) {
	const maxWrite = 16 << 20
	// The largest request either process accepts, as decoded bytes: the
	// write limit plus room for the rest of the request.
	largest := int64(jsonl.MaxTextFor(maxWrite))
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ws", "a.txt"), "hello\n")
	manifest := filepath.Join(dir, "fsmcp.yaml")
	writeFile(t, manifest, fmt.Sprintf("version: 1\nroots:\n  - {name: ws, path: ws, include: ['**'], tools: all, limits: {max_write_bytes: %d}}\n", maxWrite))
	targets := []*protoTarget{
		startTarget(t, "worker", "", workerBin, "--root", filepath.Join(dir, "ws"), "--include", "**", "--max-write-bytes", fmt.Sprint(maxWrite)),
		startTarget(t, "supervisor", "ws_", supervisorBin, "--manifest", manifest, "--worker", workerBin),
	}
	for _, p := range targets {
		t.Run(p.name, func(t *testing.T) {
			p.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+newMeta+`}}`)
			p.recv(t)
			pids := []int{p.cmd.Process.Pid}
			if p.prefix != "" {
				pids = append(pids, childPIDs(t, p.cmd.Process.Pid)...)
			}
			before := map[int]int64{}
			for _, pid := range pids {
				before[pid] = procHWM(t, pid)
			}
			send := func(id, n int) rpcReply {
				t.Helper()
				sent := make(chan error, 1)
				go func() { sent <- writeLine(p.stdin, id, p.prefix+"write_text_file", n) }()
				r := p.recv(t)
				if err := <-sent; err != nil {
					t.Fatal(err)
				}
				return r
			}
			r := send(2, 95_000_000)
			want := fmt.Sprintf("message line exceeds %d bytes once its escapes are decoded; it was skipped", largest)
			if string(r.ID) != "2" || r.Error == nil || r.Error.Code != -32600 || r.Error.Message != want {
				t.Fatalf("95 MB line: id %s error %+v result %+v; want -32600 %q", r.ID, r.Error, r.Result, want)
			}
			// The reader holds at most the largest request's worth of the
			// line before it refuses it; the collector may let as much
			// again wait as garbage (its goal is twice the live heap).
			var figures []string
			for _, pid := range pids {
				grew := procHWM(t, pid) - before[pid]
				figures = append(figures, fmt.Sprintf("pid %d %.1f MiB (from %.1f)", pid, float64(grew)/(1<<20), float64(before[pid])/(1<<20)))
				if grew > 2*largest {
					t.Errorf("pid %d: peak memory grew by %d bytes for a refused line; the bound is %d (twice the largest request)", pid, grew, 2*largest)
				}
			}
			t.Logf("figures: %s: a 95 MB line with max_write_bytes 16 MiB, refused while read: peak memory grew %s", p.name, strings.Join(figures, ", "))
			// The largest write allowed is taken, so the limit refuses
			// nothing it should not.
			r = send(3, maxWrite)
			if string(r.ID) != "3" || r.Error != nil || r.Result == nil || r.Result.IsError || !strings.Contains(r.Result.Content[0].Text, `"bytes":16777216`) {
				t.Fatalf("write of exactly max_write_bytes: id %s error %+v result %+v", r.ID, r.Error, r.Result)
			}
			figures = figures[:0]
			for _, pid := range pids {
				figures = append(figures, fmt.Sprintf("pid %d %.1f MiB", pid, float64(procHWM(t, pid))/(1<<20)))
			}
			t.Logf("figures: %s: then a 16 MiB write taken: peak memory %s", p.name, strings.Join(figures, ", "))
		})
	}
}
