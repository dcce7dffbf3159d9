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

	"github.com/fsmcp/fsmcp/worker/confine"
)

// TestAttackWriteKilled SIGKILLs the worker again and again while three
// large writes are in flight, at delays spread over the time the writes
// take: every file always holds its old bytes or its new ones, and the
// temporary files a kill leaves behind are never listed, found or read.
func TestAttackWriteKilled(t *testing.T) {
	const kills, size = 40, 1 << 20
	names := []string{"f.txt", "g.txt", "h.txt"}
	files := map[string]string{}
	for i, n := range names {
		files[n] = strings.Repeat(string(rune('0'+i)), size)
	}
	root := tree(t, files)
	// Where the filesystem makes O_TMPFILE files (ext4 here) a kill almost
	// never leaves a temporary file (TestWriteKilledWhileSyncing); one is
	// planted, as a kill on a filesystem without them leaves, so the
	// checks that none is served always have one to look at.
	writeFile(t, filepath.Join(root, confine.TempPrefix+"00000000000000aa"+confine.TempSuffix), strings.Repeat("kill planted ", 100))
	args := []string{"--root", root, "--include", "**", "--max-write-bytes", "2000000"}
	// Distinct per kill and per file, and not a repeat of one byte, so a
	// mix of two versions cannot pass for either.
	all := make([]map[string]string, kills+1+8) // 8 spare rounds, see below
	for k := range all {
		all[k] = map[string]string{}
		for i, n := range names {
			all[k][n] = strings.Repeat(fmt.Sprintf("kill %03d file %d ", k, i), size/16)
		}
	}
	texts := func(k int) map[string]string { return all[k] }
	// start runs a worker, sends the writes and returns it with the time
	// the last answer came (or zero when wait is false).
	start := func(k int, wait bool) (*exec.Cmd, time.Duration) {
		cmd := exec.Command(workerBin, args...)
		cmd.Env = []string{}
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var lines []byte
		for id, n := range names {
			req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id + 1, "method": "tools/call",
				"params": map[string]any{"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": map[string]any{}},
					"name": "write_text_file", "arguments": map[string]any{"path": n, "content": texts(k)[n]}}})
			lines = append(append(lines, req...), '\n')
		}
		began := time.Now()
		go stdin.Write(lines)
		if !wait {
			go bufio.NewReader(stdout).WriteTo(devNull{})
			return cmd, 0
		}
		sc := bufio.NewScanner(stdout)
		for range names {
			if !sc.Scan() || !strings.Contains(sc.Text(), `"bytes":`) {
				t.Fatalf("uninterrupted write: %q", sc.Text())
			}
		}
		took := time.Since(began)
		stdin.Close()
		cmd.Wait()
		return cmd, took
	}
	// One uninterrupted round measures how long the three writes take.
	_, took := start(0, true)
	for _, n := range names {
		files[n] = texts(0)[n]
	}
	var outcome tally
	tempsLeft := 0
	round := func(k int, delay time.Duration) {
		cmd, _ := start(k, false)
		time.Sleep(delay)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		var got []string
		for _, n := range names {
			b, err := os.ReadFile(filepath.Join(root, n))
			switch {
			case err != nil:
				t.Fatalf("kill %d: %s: %v", k, n, err)
			case string(b) == files[n]:
				got = append(got, "old")
			case string(b) == texts(k)[n]:
				got = append(got, "new")
				files[n] = string(b)
			default:
				t.Fatalf("kill %d: %s holds %d bytes that are neither the old text nor the new one", k, n, len(b))
			}
		}
		outcome.add(strings.Join(got, "+"))
		if k%10 == 0 || k == kills {
			tempsLeft = checkTempsUnserved(t, root, names)
		}
	}
	// The kills spread from the start of the writes to half as long again
	// as they took uninterrupted.
	for k := 1; k <= kills; k++ {
		round(k, time.Duration(int64(took)*int64(k)*3/2/kills))
	}
	// A loaded machine (the race detector, other tests) can make every
	// killed round slower than the measured one: then kill later and later
	// until one round has finished all three writes, so the test has seen
	// both ends.
	delay := took * 3 / 2
	for k := kills + 1; k < len(all) && outcome.get("new+new+new") == 0; k++ {
		delay *= 2
		round(k, delay)
	}
	tempsLeft = checkTempsUnserved(t, root, names)
	if outcome.get("old+old+old") == 0 || outcome.get("new+new+new") == 0 {
		t.Errorf("the kills never landed before or never after the writes: %s", &outcome)
	}
	t.Logf("figures: %d SIGKILLs during 3 concurrent 1 MiB writes (uninterrupted: %s): outcomes %s; %d temp files on disk (one planted), none served",
		kills, took.Round(time.Millisecond), &outcome, tempsLeft)
}

type devNull struct{}

func (devNull) Write(p []byte) (int, error) { return len(p), nil }

// checkTempsUnserved starts a worker that serves everything (built-in
// excludes off) and checks that no temporary file in root is listed, found
// by either search, or read. It returns how many there are on disk.
func checkTempsUnserved(t *testing.T, root string, names []string) int {
	t.Helper()
	cs := worker(t, root, "--include", "**", "--no-default-exclude")
	temps := tempNames(t, root)
	r := ok(t, cs, "list_directory", map[string]any{})
	if got, want := paths(items[entryItem](t, r)), strings.Join(func() []string {
		var out []string
		for _, n := range names {
			out = append(out, n+":file")
		}
		return out
	}(), " "); got != want {
		t.Fatalf("listing with %d temp files on disk: %s, want %s", len(temps), got, want)
	}
	for _, q := range []string{"fsmcp", ".tmp", "write"} {
		if r := ok(t, cs, "search_files", map[string]any{"query": q}); len(r.page.Items) != 0 {
			t.Fatalf("search_files %q found %s", q, r.page.Items)
		}
	}
	// Temp files hold the new texts: a search for one finds only served
	// files.
	r = ok(t, cs, "search_text", map[string]any{"query": "kill", "limit": 1000})
	for _, h := range items[textHit](t, r) {
		if confine.IsTempName(h.Path) {
			t.Fatalf("search_text reported a temp file: %s", h.Path)
		}
	}
	for _, n := range temps {
		fails(t, cs, "read_text_file", map[string]any{"path": n}, "path matches an --exclude pattern of this root")
		fails(t, cs, "write_text_file", map[string]any{"path": n, "content": "x"}, errWriteName)
	}
	return len(temps)
}
