package jsonl

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestDecodeAgreesWithSDK holds Decode to jsonrpc.DecodeMessage: the same
// message, or an error from both; and decodeCall to Decode for every line
// that is not a call it keeps the id of.
func TestDecodeAgreesWithSDK(t *testing.T) {
	deep := strings.Repeat("[", 1001) + strings.Repeat("]", 1001)
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,2,{"b":"\u00e9\n"}]}}}`,
		`{"jsonrpc":"2.0","id":"s-1","method":"tools/list"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
		`{"jsonrpc":"2.0","id":7,"method":""}`,
		`{"jsonrpc":"2.0","id":7,"result":{"content":[],"structuredContent":{"items":[]}}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad","data":{"k":1}}}`,
		`{"jsonrpc":"2.0","id":7.5,"method":"x"}`,
		`{"jsonrpc":"2.0","result":{}}`,
		`{"jsonrpc":"1.0","id":1,"method":"x"}`,
		`{"JSONRPC":"2.0","id":1,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"Method":"x"}`,
		`{"jsonrpc":"2.0","id":[1],"method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":3}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":` + deep + `}`,
		`[1]`,
		`"text"`,
	} {
		want, wantErr := jsonrpc.DecodeMessage([]byte(line))
		got, gotErr := Decode([]byte(line))
		if (wantErr != nil) != (gotErr != nil) {
			t.Errorf("%.80s: Decode error %v, SDK error %v", line, gotErr, wantErr)
			continue
		}
		if wantErr == nil && !reflect.DeepEqual(normal(got), normal(want)) {
			t.Errorf("%.80s: Decode = %#v, SDK = %#v", line, got, want)
		}
		// What is not a call with an id decodeCall keeps is decoded
		// by decodeCall as by Decode.
		if msg, raw, err := decodeCall([]byte(line)); raw == nil && !errors.Is(err, errIDNotInteger) {
			if (err != nil) != (gotErr != nil) || err == nil && !reflect.DeepEqual(normal(msg), normal(got)) {
				t.Errorf("%.80s: decodeCall = %#v, %v; Decode = %#v, %v", line, msg, err, got, gotErr)
			}
		}
	}
}

// normal compacts raw fields so that equal JSON compares equal.
func normal(m jsonrpc.Message) jsonrpc.Message {
	switch m := m.(type) {
	case *jsonrpc.Request:
		c := *m
		c.Params = []byte(strings.TrimSpace(string(c.Params)))
		return &c
	case *jsonrpc.Response:
		c := *m
		c.Result = []byte(strings.TrimSpace(string(c.Result)))
		return &c
	}
	return m
}

// TestDecodeCopies: the decoded message does not alias the input, which
// the transport reuses for the next line.
func TestDecodeCopies(t *testing.T) {
	line := []byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"p":"v"}}`)
	msg, err := Decode(line)
	if err != nil {
		t.Fatal(err)
	}
	for i := range line {
		line[i] = ' '
	}
	if req := msg.(*jsonrpc.Request); req.Method != "m" || string(req.Params) != `{"p":"v"}` {
		t.Fatalf("decoded message changed with its input: %#v", req)
	}
}

// FuzzDecodeAgreesWithSDK: on any input, Decode and the SDK both fail or
// decode the same message. (Decode also refuses data after the message,
// which the SDK ignores; the transport has refused such lines before.)
func FuzzDecodeAgreesWithSDK(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"m","params":{}}`, `{"jsonrpc":"2.0","id":"a","result":{}}`, `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}`, `{"jsonrpc":"2.0"}`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		want, wantErr := jsonrpc.DecodeMessage(data)
		got, gotErr := Decode(data)
		if (wantErr != nil) != (gotErr != nil) {
			t.Fatalf("%q: Decode error %v, SDK error %v", data, gotErr, wantErr)
		}
		if wantErr == nil && !reflect.DeepEqual(normal(got), normal(want)) {
			t.Fatalf("%q: Decode = %#v, SDK = %#v", data, got, want)
		}
	})
}

// BenchmarkDecodeCallResponse: the transport's decoding of a response line
// (a relayed 1-chunk read page, as the supervisor reads it from a worker).
func BenchmarkDecodeCallResponse(b *testing.B) {
	body, _ := json.Marshal(strings.Repeat("0123456789abcdef fsmcp one-chunk page line\n", 24)[:1000])
	page := `{"items":[{"byte_offset":0,"text":` + string(body) + `}],"next_cursor":null}`
	text, _ := json.Marshal(page)
	line := []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":` + string(text) + `}],"structuredContent":` + page + `,"resultType":"complete"}}`)
	for range b.N {
		if _, _, err := decodeCall(line); err != nil {
			b.Fatal(err)
		}
	}
}

// TestIsInteger: a JSON number is an integer id by its value, however it
// is written, and an exponent too large for an int is judged by its sign.
func TestIsInteger(t *testing.T) {
	for _, tc := range []struct {
		num  string
		want bool
	}{
		{"0", true}, {"-0", true}, {"12", true}, {"2.0", true}, {"100.00", true}, {"1e3", true},
		{"1E+3", true}, {"150e-1", true}, {"100e-2", true}, {"0.0e-9", true}, {"1.5e1", true},
		{"1e99999999999999999999", true}, {"18446744073709551615", true},
		{"1.5", false}, {"-0.25", false}, {"15e-1", false}, {"1.50", false}, {"1e-1", false},
		{"101e-2", false}, {"1e-99999999999999999999", false},
	} {
		if got := isInteger([]byte(tc.num)); got != tc.want {
			t.Errorf("isInteger(%s) = %v, want %v", tc.num, got, tc.want)
		}
	}
}
