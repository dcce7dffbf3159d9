package jsonl

import (
	"strings"
	"testing"
	"time"
)

func listReqID(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list","params":{` + meta + `}}`
}

func blockReqID(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{` + meta + `,"name":"block","arguments":{}}}`
}

func cancelReq(id string) string {
	return `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `,"reason":"test"}}`
}

// TestIDsEchoedExactly: every id a call may carry (a string or an integer,
// of any size and however written) comes back as the bytes it was sent as,
// on a result and on an error alike; a number with a fraction is refused
// with -32600 and no id, since no answer may carry it.
func TestIDsEchoedExactly(t *testing.T) {
	h := serve(t, &Transport{})
	for _, id := range []string{`1.5`, `15e-1`, `-0.25`, `1E-400`} {
		h.send(t, listReqID(id))
		if r := h.recv(t); r.ID != nil || r.Error == nil || r.Error.Code != -32600 || r.Error.Message != errIDNotInteger.Error() {
			t.Errorf("tools/list with id %s answered id %s, error %+v; want -32600 without an id", id, r.ID, r.Error)
		}
	}
	for _, id := range []string{`9007199254740993`, `18446744073709551615`, `1E400`, `-0`, `1e2`, `2.0`, `150e-1`, `1.5e1`,
		`"a"`, `"\u0061"`, `""`, `"é\n"`, `0`, `-9223372036854775809`} {
		h.send(t, listReqID(id))
		if r := h.recv(t); string(r.ID) != id || r.Error != nil {
			t.Errorf("tools/list with id %s answered id %s, error %+v", id, r.ID, r.Error)
		}
		h.send(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"no/such/method","params":{`+meta+`}}`)
		if r := h.recv(t); string(r.ID) != id || r.Error == nil {
			t.Errorf("unknown method with id %s answered id %s, error %+v", id, r.ID, r.Error)
		}
	}
}

// TestDuplicateIDRefused: a call reusing the id of a call in flight gets
// -32600 at once and takes no slot; the first call is still answered, and
// once it is the id may be used again. A string id and a number with the
// same digits are different ids; two spellings of one string are the same.
func TestDuplicateIDRefused(t *testing.T) {
	h := serve(t, &Transport{MaxInFlight: 2})
	h.send(t, blockReqID(`"x"`))
	h.waitEntered(t, 1)
	for range 5 {
		for _, dup := range []string{`"x"`, `"\u0078"`} {
			h.send(t, listReqID(dup))
			r := h.recv(t)
			if string(r.ID) != dup || r.Error == nil || r.Error.Code != -32600 || !strings.Contains(r.Error.Message, "already used by a call in flight") {
				t.Fatalf("duplicate %s answered id %s, %+v", dup, r.ID, r.Error)
			}
		}
	}
	// Ten refusals later the second slot is still free.
	h.send(t, blockReqID(`7`))
	h.waitEntered(t, 2)
	h.let()
	got := map[string]bool{}
	for range 2 {
		r := h.recv(t)
		if r.Error != nil {
			t.Fatalf("call %s: %+v", r.ID, r.Error)
		}
		got[string(r.ID)] = true
	}
	if !got[`"x"`] || !got[`7`] {
		t.Fatalf("answered %v, want \"x\" and 7", got)
	}
	h.send(t, listReqID(`"x"`))
	if r := h.recv(t); string(r.ID) != `"x"` || r.Error != nil {
		t.Fatalf("id reused after its answer: id %s, %+v", r.ID, r.Error)
	}
}

// TestCancelledCallSendsNothing: after notifications/cancelled no response
// is written for that id, the handler sees the cancellation, its slot is
// freed once it returns, and the peer may reuse the id at once.
func TestCancelledCallSendsNothing(t *testing.T) {
	h := serve(t, &Transport{MaxInFlight: 1})
	h.send(t, blockReqID(`18446744073709551615`))
	h.waitEntered(t, 1)
	h.send(t, cancelReq(`18446744073709551615`))
	// The cancelled handler returns; its response must not appear. The
	// next call (same id) is refused as busy until the slot is free, then
	// answered; no line is ever the cancelled call's answer.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		h.send(t, listReqID(`18446744073709551615`))
		r := h.recv(t)
		if string(r.ID) != `18446744073709551615` || strings.Contains(string(r.Result), "released") {
			t.Fatalf("line after the cancellation: id %s result %.80s; the cancelled call was answered", r.ID, r.Result)
		}
		if r.Error != nil && r.Error.Code == CodeBusy && time.Now().Before(deadline) {
			continue // the cancelled handler has not returned yet
		}
		if r.Error != nil || !strings.Contains(string(r.Result), `"tools"`) {
			t.Fatalf("after the cancellation: result %.80s error %+v; want the tools/list answer", r.Result, r.Error)
		}
		break
	}
	// A cancellation for an id nobody uses changes nothing.
	h.send(t, cancelReq(`"nobody"`))
	h.send(t, listReqID(`2`))
	if r := h.recv(t); string(r.ID) != "2" || r.Error != nil {
		t.Fatalf("after a stray cancellation: id %s, %+v", r.ID, r.Error)
	}
	select {
	case <-time.After(50 * time.Millisecond):
	case <-h.done:
		t.Fatal("server stopped")
	}
}
