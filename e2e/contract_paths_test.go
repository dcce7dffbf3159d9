//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pathRow is one call of TestContractDotPaths: arguments as sent, and
// either the exact error text the call must answer, or the arguments of
// the canonical call whose answer it must equal.
type pathRow struct {
	tool, args string
	want       string
	same       string
}

// dotPathRows are docs/reference.md's Paths rules for every tool: only a bare
// "." names the root (as "" does); "./", ".//", "./lib", "lib/." and other
// dot segments are refused; a trailing or doubled slash is dropped.
func dotPathRows() []pathRow {
	var rows []pathRow
	for _, p := range []string{"./", ".//", "./lib", "lib/.", "./lib/x", "lib/./x", "./top.txt", "lib/x/y.txt/."} {
		q, _ := json.Marshal(p)
		rows = append(rows,
			pathRow{"list_directory", `{"path":` + string(q) + `}`, errPath, ""},
			pathRow{"search_files", `{"query":"txt","path":` + string(q) + `}`, errPath, ""},
			pathRow{"search_text", `{"query":"needle","path":` + string(q) + `}`, errPath, ""},
			pathRow{"read_text_file", `{"path":` + string(q) + `}`, errPath, ""},
			// The write's name rule is checked first, and no dot path
			// passes it.
			pathRow{"write_text_file", `{"path":` + string(q) + `,"content":"x"}`, errWriteName, ""},
		)
	}
	for _, tool := range []string{"search_files", "search_text"} {
		q := map[string]string{"search_files": `"query":"txt"`, "search_text": `"query":"needle"`}[tool]
		rows = append(rows,
			pathRow{tool, `{` + q + `,"path":""}`, "", `{` + q + `}`},
			pathRow{tool, `{` + q + `,"path":"."}`, "", `{` + q + `}`},
			pathRow{tool, `{` + q + `,"path":"lib/"}`, "", `{` + q + `,"path":"lib"}`},
			pathRow{tool, `{` + q + `,"path":"lib//x"}`, "", `{` + q + `,"path":"lib/x"}`},
		)
	}
	return append(rows,
		pathRow{"list_directory", `{"path":""}`, "", `{}`},
		pathRow{"list_directory", `{"path":"."}`, "", `{}`},
		pathRow{"list_directory", `{"path":"lib/"}`, "", `{"path":"lib"}`},
		pathRow{"list_directory", `{"path":"lib//x"}`, "", `{"path":"lib/x"}`},
		pathRow{"list_directory", `{"path":"lib//x//"}`, "", `{"path":"lib/x"}`},
		pathRow{"search_text", `{"query":"needle","path":"lib//x/y.txt"}`, "", `{"query":"needle","path":"lib/x/y.txt"}`},
		pathRow{"read_text_file", `{"path":"lib//x/y.txt"}`, "", `{"path":"lib/x/y.txt"}`},
		pathRow{"read_text_file", `{"path":"top.txt/"}`, "", `{"path":"top.txt"}`},
		pathRow{"read_text_file", `{"path":"."}`, errNotReadable, ""},
	)
}

// TestContractDotPaths holds every tool of both binaries to the path rules,
// through the go-sdk client and on the raw wire (each raw call sent twice
// with a _meta not seen before, so the first is answered by the SDK and the
// second on the worker's direct path). No refused call changes the root.
func TestContractDotPaths(t *testing.T) {
	raw, sdk, prefix, root := wireServers(t)
	before := snapshot(t, root)
	rows := dotPathRows()
	for name, cs := range sdk {
		t.Run(name+"/sdk", func(t *testing.T) {
			for _, row := range rows {
				got := sdkAnswer(t, cs, prefix[name]+row.tool, row.args)
				checkPathAnswer(t, row, got, func() string { return sdkAnswer(t, cs, prefix[name]+row.tool, row.same) })
			}
		})
	}
	for _, p := range raw {
		t.Run(p.name+"/raw", func(t *testing.T) {
			id := 0
			send := func(args string, k int) string {
				id++
				meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
					`"io.modelcontextprotocol/clientInfo":{"name":"paths","version":"` + strconv.Itoa(k) + `"}}`
				return rawAnswer(t, p, id, meta, args)
			}
			for i, row := range rows {
				for k := range 2 {
					got := send(`"name":"`+p.prefix+row.tool+`","arguments":`+row.args, 2*i+k)
					checkPathAnswer(t, row, got, func() string {
						return send(`"name":"`+p.prefix+row.tool+`","arguments":`+row.same, 2*i+k)
					})
				}
			}
		})
	}
	if after := snapshot(t, root); after != before {
		t.Errorf("the calls changed the root:\nbefore %s\nafter  %s", before, after)
	}
}

// checkPathAnswer checks one answer (an error's text, or a result's value)
// against its row; same gives the canonical call's answer.
func checkPathAnswer(t *testing.T, row pathRow, got string, same func() string) {
	t.Helper()
	if row.want != "" {
		if got != "error: "+row.want {
			t.Errorf("%s %s = %.300s, want error %q", row.tool, row.args, got, row.want)
		}
		return
	}
	want := same()
	if strings.HasPrefix(want, "error: ") || !strings.Contains(want, `"items":[{`) {
		t.Fatalf("%s %s: the canonical call answered %.300s, want items", row.tool, row.same, want)
	}
	if got != want {
		t.Errorf("%s %s = %.300s\nwant the answer to %s: %.300s", row.tool, row.args, got, row.same, want)
	}
}

// sdkAnswer calls tool with the JSON arguments args through the go-sdk
// client: "error: <text>" for a tool error, else the structured value.
func sdkAnswer(t *testing.T, cs *mcp.ClientSession, tool, args string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("%s %s: %v", tool, args, err)
	}
	var texts []string
	for _, c := range res.Content {
		tc, ok := c.(*mcp.TextContent)
		if !ok {
			t.Fatalf("%s %s: content %T, want text", tool, args, c)
		}
		texts = append(texts, tc.Text)
	}
	return answerOf(t, res.IsError, texts, res.StructuredContent)
}

// rawAnswer sends one tools/call line whose params are meta and call, and
// answers as sdkAnswer does from the bytes the server wrote.
func rawAnswer(t *testing.T, p *protoTarget, id int, meta, call string) string {
	t.Helper()
	p.send(t, `{"jsonrpc":"2.0","id":`+strconv.Itoa(id)+`,"method":"tools/call","params":{`+meta+`,`+call+`}}`)
	line := p.recvLine(t)
	var r struct {
		ID     int `json:"id"`
		Result *struct {
			IsError           bool            `json:"isError"`
			Content           json.RawMessage `json:"content"`
			StructuredContent json.RawMessage `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(line), &r); err != nil || r.Result == nil || r.ID != id {
		t.Fatalf("%s: %s: not the result of call %d (%v): %.300s", p.name, call, id, err, line)
	}
	var content []struct{ Type, Text string }
	if err := json.Unmarshal(r.Result.Content, &content); err != nil {
		t.Fatalf("%s: content %s: %v", p.name, r.Result.Content, err)
	}
	var texts []string
	for _, c := range content {
		if c.Type != "text" {
			t.Fatalf("%s: %s: content of type %q, want text", p.name, call, c.Type)
		}
		texts = append(texts, c.Text)
	}
	var sc any
	if len(r.Result.StructuredContent) > 0 {
		sc = r.Result.StructuredContent
	}
	return answerOf(t, r.Result.IsError, texts, sc)
}

// answerOf is a result as one comparable string: "error: <text>" for a
// tool error (which must be one text and no structured value), else the
// structured value as compact JSON.
func answerOf(t *testing.T, isError bool, texts []string, sc any) string {
	t.Helper()
	if isError {
		if len(texts) != 1 || sc != nil {
			t.Fatalf("a tool error of %d texts and structured content %v", len(texts), sc)
		}
		return "error: " + texts[0]
	}
	var v any
	if err := json.Unmarshal(mustJSON(sc), &v); err != nil {
		t.Fatal(err)
	}
	return string(mustJSON(v))
}
