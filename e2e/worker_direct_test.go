//go:build linux

package e2e

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestWorkerDirectSameAnswers: the worker answers a tools/call on its
// direct path (profile.Server) with the bytes the SDK writes. Each call
// goes twice with a _meta the worker has not seen (its own clientInfo,
// and a member of the host's own, as hosts add a tool-use id):
// the first is answered by the SDK, which vouches for that _meta, the
// second on the direct path. The two lines must be the same, cursors
// aside: a cursor's signature differs from one issue to the next, so each
// line's next_cursor is put back as a placeholder before comparing.
func TestWorkerDirectSameAnswers(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "ws")
	for p, body := range map[string]string{
		"big.txt":   strings.Repeat("0123456789abcde\n", 2048),
		"a.txt":     "hello <b>&amp;</b> \u2028 caf\u00e9\n",
		"dir/b.txt": "a needle here\n\xff not UTF-8\n",
		"x<y>&.txt": "name with HTML characters\n",
	} {
		writeFile(t, filepath.Join(root, p), body)
	}
	w := startTarget(t, "worker", "", workerBin, "--root", root, "--include", "**")
	calls := []struct{ tool, args string }{
		{"read_text_file", `{"path":"a.txt"}`},
		{"read_text_file", `{"path":"big.txt","limit":1}`},
		{"read_text_file", `{"path":"big.txt","start_line":2000}`},
		{"read_text_file", `{"path":"dir/b.txt"}`},
		{"read_text_file", `{"path":"missing.txt"}`},
		{"read_text_file", `{"path":"../x"}`},
		{"read_text_file", `{"path":"a.txt","bogus":1}`},
		{"read_text_file", `{"path":"a.txt","limit":"1"}`},
		{"read_text_file", `{"path":"big.txt","cursor":"not.valid"}`},
		{"list_directory", `{}`},
		{"list_directory", `{"path":"","limit":1}`},
		{"search_files", `{"query":"TXT","case_insensitive":true}`},
		{"search_text", `{"query":"needle"}`},
		{"search_text", `{"any_of":["needle","HELLO"],"case_insensitive":true}`},
		{"search_text", `{"query":"0123","limit":2}`},
		{"search_text", `{"query":"a","any_of":["b"]}`},
		{"write_text_file", `{"path":"out.txt","content":"x <y> & \u2028 z\n"}`},
		{"write_text_file", `{"path":"Out.txt","content":""}`},
	}
	id := 0
	for i, c := range calls {
		meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
			`"io.modelcontextprotocol/clientInfo":{"name":"direct-test","version":"` + strconv.Itoa(i) + `"},"host/toolUseId":"use-` + strconv.Itoa(i) + `"}`
		var lines [2]string
		for k := range lines {
			id++
			w.send(t, `{"jsonrpc":"2.0","id":`+strconv.Itoa(id)+`,"method":"tools/call","params":{`+meta+`,"name":"`+c.tool+`","arguments":`+c.args+`}}`)
			line := w.recvLine(t)
			if !strings.Contains(line, `"result":{`) {
				t.Fatalf("%s %s: not a result, so nothing vouches for the _meta: %s", c.tool, c.args, line)
			}
			lines[k] = strings.Replace(withoutCursor(t, line), `"id":`+strconv.Itoa(id)+`,`, `"id":ID,`, 1)
		}
		if lines[0] != lines[1] {
			t.Errorf("%s %s:\nSDK:    %s\ndirect: %s", c.tool, c.args, lines[0], lines[1])
		}
	}
}

// withoutCursor is line with its result's next_cursor, wherever it
// appears (in structuredContent and escaped in the text), as CURSOR.
func withoutCursor(t *testing.T, line string) string {
	t.Helper()
	var r struct {
		Result struct {
			StructuredContent struct {
				NextCursor *string `json:"next_cursor"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatalf("not JSON: %.300s", line)
	}
	if c := r.Result.StructuredContent.NextCursor; c != nil {
		return strings.ReplaceAll(line, *c, "CURSOR")
	}
	return line
}
