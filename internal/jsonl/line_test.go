package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
)

// readAll reads input with a lineReader of the given limits through a
// 16-byte buffer, so lines arrive in many pieces, and lists what it gave.
func readAll(t *testing.T, input string, maxLine, maxText int) (lines []string, refusals []refusal) {
	t.Helper()
	lr := &lineReader{r: bufio.NewReaderSize(strings.NewReader(input), 16), maxLine: maxLine, maxText: maxText}
	for {
		line, refused, err := lr.next()
		if refused != nil {
			refusals = append(refusals, *refused)
		} else if len(line) > 0 || err == nil {
			lines = append(lines, string(line))
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			return lines, refusals
		}
	}
}

func TestLineLimits(t *testing.T) {
	call := func(id, arg string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"w","arguments":{"content":"` + arg + `"}}}`
	}
	idLast := func(id, arg string) string {
		return `{"method":"tools/call","params":{"arguments":{"content":"` + arg + `","id":1}},"jsonrpc":"2.0","id":` + id + `}`
	}
	const maxLine, maxText = 600, 200
	for _, tc := range []struct {
		name   string
		line   string
		passes bool
		id     string // the refusal's id, "" for none
		why    string
	}{
		{"short", call("1", "abc"), true, "", ""},
		{"at the text limit, a CR included", call("1", strings.Repeat("a", maxText-1-len(call("1", "")))), true, "", ""},
		{"over the text limit", call("2", strings.Repeat("a", maxText)), false, "2", "exceeds 200 bytes once its escapes are decoded"},
		{"escaped, within the text limit", call("1", strings.Repeat(`\u0001`, 60)), true, "", ""},
		{"escaped backslashes, within", call("1", strings.Repeat(`\\`, 100)), true, "", ""},
		{"escaped, over the text limit", call(`"x"`, strings.Repeat(`\n`, 250)), false, `"x"`, "once its escapes are decoded"},
		{"over the line limit, within the text limit", call("3", strings.Repeat(`\u0001`, 100)), false, "3", "message line exceeds 600 bytes"},
		{"id after the params", idLast(`"late\"id"`, strings.Repeat("a", 5000)), false, `"late\"id"`, "once its escapes are decoded"},
		{"id a number at the end", idLast("-12.5e3", strings.Repeat("a", 500)), false, "-12.5e3", "once its escapes"},
		{"no id", `{"jsonrpc":"2.0","method":"x","params":{"a":"` + strings.Repeat("a", 500) + `"}}`, false, "", "once its escapes"},
		{"id null", `{"id":null,"method":"x","params":{"a":"` + strings.Repeat("a", 500) + `"}}`, false, "", "once its escapes"},
		{"id an object, then another id", `{"id":{"id":1},"params":"` + strings.Repeat("a", 500) + `","id":2}`, false, "", "once its escapes"},
		{"id written escaped", `{"\u0069d":7,"params":"` + strings.Repeat("a", 500) + `"}`, false, "7", "once its escapes"},
		{"not an object", `["` + strings.Repeat("a", 500) + `"]`, false, "", "once its escapes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := call("9", "next")
			for _, end := range []string{"\n" + next + "\n", "\r\n" + next, ""} {
				lines, refusals := readAll(t, tc.line+end, maxLine, maxText)
				want := 0
				if end != "" {
					want = 1
				}
				if tc.passes {
					want++
					if len(lines) != want || strings.TrimSpace(lines[0]) != tc.line || len(refusals) != 0 {
						t.Fatalf("ending %q: lines %d, refusals %+v; want the line back", end, len(lines), refusals)
					}
					continue
				}
				if len(refusals) != 1 || string(refusals[0].id) != tc.id || !strings.Contains(refusals[0].why, tc.why) {
					t.Fatalf("ending %q: refusals %+v, want one with id %q saying %q", end, refusals, tc.id, tc.why)
				}
				if len(lines) != want || (want == 1 && strings.TrimSpace(lines[0]) != next) {
					t.Fatalf("ending %q: lines after the refusal %q, want %d", end, lines, want)
				}
			}
		})
	}
}

// FuzzEscapesLowerBound: what escapes says a JSON string saves is never
// more than it does (so no line that fits is refused), and does not
// depend on where the string is cut into pieces.
func FuzzEscapesLowerBound(f *testing.F) {
	for _, s := range []string{"", "abc", "a\nb", `"\`, "\x00\x01<>&", "é\u2028", "\xff\xfe", "\U0001F600"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, cut int) {
		enc, err := json.Marshal(s)
		if err != nil {
			t.Skip()
		}
		var dec string
		if err := json.Unmarshal(enc, &dec); err != nil {
			t.Fatal(err)
		}
		var whole, split escapes
		whole.count(enc)
		cut = min(max(cut, 0), len(enc))
		split.count(enc[:cut])
		split.count(enc[cut:])
		if whole.saved != split.saved {
			t.Fatalf("%q: saved %d whole, %d cut at %d", enc, whole.saved, split.saved, cut)
		}
		if low := len(enc) - whole.saved; low > len(dec)+2 {
			t.Fatalf("%q: counted %d bytes decoded, but it decodes to %d (with its quotes)", enc, low, len(dec)+2)
		}
	})
}

// FuzzIDFinder: on a line that is a JSON object, the id the finder gives
// (fed the line in two pieces) is the one requestID reads; on any line it
// is nil or an id a call may carry.
func FuzzIDFinder(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"x"}`, `{"a":{"id":2},"id":"b\"c"}`, `{"id":-1.5e3}`, `{"id":[1]}`,
		`{"\u0069d":3}`, `{"id" : 4 , "x":[]}`, `{"x":"\\","id":5}`, `[{"id":1}]`, `{"id":1`, `  {"id":"x"}`} {
		f.Add([]byte(s), 5)
	}
	f.Fuzz(func(t *testing.T, line []byte, cut int) {
		var fd idFinder
		cut = min(max(cut, 0), len(line))
		fd.feed(line[:cut])
		fd.feed(line[cut:])
		got := fd.result()
		if got != nil && (!isID(got) || !json.Valid(got)) {
			t.Fatalf("%q: id %q is not a string or a number", line, got)
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(line, &obj) != nil {
			return
		}
		if want := requestID(line); !bytes.Equal(got, want) {
			t.Fatalf("%q: finder %q, requestID %q", line, got, want)
		}
	})
}

// TestTextLimitTransport: through a transport, a line over MaxText is
// answered with -32600 and its id (written after the params, as some SDKs
// do) while it is read, allocating a small multiple of the limit however
// long the line; an escaped line within MaxText is served; and with
// ReadsAnswers the refusal is Read's error, after which Read goes on.
func TestTextLimitTransport(t *testing.T) {
	const maxText = 256 << 10
	h := serve(t, &Transport{MaxLine: 6 * maxText, MaxText: maxText})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	io.WriteString(h.in, `{"jsonrpc":"2.0","method":"tools/call","params":{`+meta+`,"name":"block","arguments":{"text":"`)
	for sent := 0; sent < 32*maxText; sent += len(chunk) {
		if _, err := h.in.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	h.send(t, `"}},"id":"late"}`)
	r := h.recv(t)
	runtime.ReadMemStats(&after)
	if r.Error == nil || r.Error.Code != -32600 || string(r.ID) != `"late"` || !strings.Contains(r.Error.Message, "exceeds 262144 bytes once its escapes are decoded") {
		t.Fatalf("line over the text limit answered id %s, %+v", r.ID, r.Error)
	}
	grew := after.TotalAlloc - before.TotalAlloc
	t.Logf("a %d-byte line allocated %d bytes", 32*maxText, grew)
	if grew > 4*maxText {
		t.Errorf("a %d-byte line allocated %d bytes; the bound is %d", 32*maxText, grew, 4*maxText)
	}
	// 60,000 escaped control characters: 360,000 bytes of line, within
	// MaxText once decoded.
	h.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{`+meta+`,"pad":"`+strings.Repeat(`\u0001`, 60000)+`"}}`)
	if r := h.recv(t); r.Error != nil || string(r.ID) != "3" {
		t.Fatalf("escaped line within the text limit: id %s, %+v", r.ID, r.Error)
	}

	answers := `{"jsonrpc":"2.0","id":1,"result":{"a":"` + strings.Repeat("a", 300) + `"}}` + "\n" + `{"jsonrpc":"2.0","id":2,"result":{}}` + "\n"
	c, err := (&Transport{Reader: strings.NewReader(answers), Writer: io.Discard, MaxLine: 200, ReadsAnswers: true}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Read(context.Background())
	var re *RefusedError
	if !errors.As(err, &re) || string(re.ID) != "1" || !strings.Contains(re.Why, "exceeds 200 bytes") {
		t.Fatalf("over-long answer: %v, want a RefusedError with id 1", err)
	}
	if msg, err := c.Read(context.Background()); err != nil || msg == nil {
		t.Fatalf("answer after the refused one: %v %v", msg, err)
	}
}
