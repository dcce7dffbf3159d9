package jsonl

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestEncodeMatchesSDK(t *testing.T) {
	id7, _ := jsonrpc.MakeID(float64(7))
	idS, _ := jsonrpc.MakeID("a\"b")
	req, _ := jsonrpc.MakeID(float64(1))
	for _, msg := range []jsonrpc.Message{
		&jsonrpc.Response{ID: id7, Result: json.RawMessage(`{"content":[{"type":"text","text":"x\n\u003c"}],"n":1}`)},
		&jsonrpc.Response{ID: idS, Result: json.RawMessage(`{}`)},
		&jsonrpc.Response{Result: json.RawMessage(`{}`)},
		&jsonrpc.Response{ID: id7, Error: &jsonrpc.Error{Code: -32602, Message: "bad"}},
		&jsonrpc.Request{ID: req, Method: "tools/list", Params: json.RawMessage(`{}`)},
		&jsonrpc.Request{Method: "notifications/cancelled", Params: json.RawMessage(`{"requestId":1}`)},
		&jsonrpc.Request{ID: idS, Method: "tools/call", Params: json.RawMessage(`{"name":"t", "arguments":{"text":"\u003c\"x\""}}`)},
		&jsonrpc.Request{ID: req, Method: "ping"},
	} {
		want, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Encode(msg)
		if err != nil {
			t.Fatal(err)
		}
		var g, w any
		if json.Unmarshal(got, &g) != nil || json.Unmarshal(want, &w) != nil {
			t.Fatalf("invalid JSON: %s / %s", got, want)
		}
		gb, _ := json.Marshal(g)
		wb, _ := json.Marshal(w)
		if string(gb) != string(wb) {
			t.Errorf("Encode = %s, SDK = %s", got, want)
		}
	}
}

// session connects a Transport to the given input and collects what it
// delivers and what it writes back.
func session(t *testing.T, input string, limit int) (delivered []jsonrpc.Message, written []string, end error) {
	t.Helper()
	var out strings.Builder
	c, err := (&Transport{Reader: strings.NewReader(input), Writer: &out, MaxLine: limit}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for {
		msg, err := c.Read(context.Background())
		if err != nil {
			end = err
			break
		}
		delivered = append(delivered, msg)
	}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		written = append(written, sc.Text())
	}
	return delivered, written, end
}

func TestReadSkipsWhatIsNotAMessage(t *testing.T) {
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	long := `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"` + strings.Repeat("x", 200) + `"}}`
	for _, tc := range []struct {
		name      string
		input     string
		delivered int
		errors    []string // substrings of the written error lines, in order
	}{
		{"one message", ping + "\n", 1, nil},
		{"no final newline", ping, 1, nil},
		{"CRLF and blank lines", "\r\n\n" + ping + "\r\n  \n", 1, nil},
		{"malformed JSON", "{not json\n" + ping + "\n", 1, []string{`{"jsonrpc":"2.0","error":{"code":-32700`}},
		{"batch", "[" + ping + "]\n" + ping + "\n", 1, []string{`"code":-32600,"message":"JSON-RPC batches`}},
		{"not JSON-RPC, id kept", `{"id":9,"method":3}` + "\n" + ping + "\n", 1, []string{`"id":9,"error":{"code":-32600`}},
		{"over-long line", long + "\n" + ping + "\n", 1, []string{`exceeds 100 bytes`}},
		{"over-long last line", ping + "\n" + long, 1, []string{`exceeds 100 bytes`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, written, end := session(t, tc.input, 100)
			if !errors.Is(end, io.EOF) {
				t.Errorf("ended with %v, want EOF", end)
			}
			if len(got) != tc.delivered {
				t.Errorf("delivered %d messages, want %d", len(got), tc.delivered)
			}
			if len(written) != len(tc.errors) {
				t.Fatalf("wrote %q, want %d error lines", written, len(tc.errors))
			}
			for i, want := range tc.errors {
				if !strings.Contains(written[i], want) || !json.Valid([]byte(written[i])) {
					t.Errorf("error line %q, want it to contain %q", written[i], want)
				}
			}
		})
	}
}
