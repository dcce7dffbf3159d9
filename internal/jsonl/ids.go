package jsonl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	segjson "github.com/segmentio/encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The transport gives every call it reads an id of its own before the SDK
// sees it, and puts the peer's id back, as the bytes the peer wrote, on the
// response. So an id the SDK would change (2^53+1 or 2^64-1 rounded to a
// float64, 1.5 cut to 1, 1E400 refused) comes back as it was sent; a call
// whose id is already in flight is refused here, before it takes a slot;
// and the response to a call the peer cancelled is dropped, as MCP asks.

// calls is the id table of one connection.
type calls struct {
	mu    sync.Mutex
	next  int64
	live  map[string]int64    // peer's id (its key) of a call in flight -> local id
	byID  map[int64]*incoming // local id -> the call
	gone  int                 // calls cancelled, not yet answered, still holding a slot
	freed int                 // calls cancelled, not yet answered, whose slot was freed
}

// incoming is a call read and not yet answered.
type incoming struct {
	raw       json.RawMessage // its id as the peer wrote it
	key       string
	cancelled bool // the peer cancelled it; its response is not sent
	freed     bool // cancelled, and its slot freed before its handler returned
}

// idKey is the identity of a peer's id: a string by its value (however it
// was escaped), a number by its literal.
func idKey(raw json.RawMessage) string {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if segjson.Unmarshal(raw, &s) == nil {
			return "s" + s
		}
	}
	return "n" + string(raw)
}

// open registers a call with the peer's id raw and returns its local id,
// or false when a call with that id is in flight.
func (t *calls) open(raw json.RawMessage) (jsonrpc.ID, bool) {
	key := idKey(raw)
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, dup := t.live[key]; dup {
		return jsonrpc.ID{}, false
	}
	if t.live == nil {
		t.live, t.byID = map[string]int64{}, map[int64]*incoming{}
	}
	t.next++
	t.live[key] = t.next
	t.byID[t.next] = &incoming{raw: bytes.Clone(raw), key: key}
	id, _ := jsonrpc.MakeID(float64(t.next))
	return id, true
}

// cancel marks the call named by a notifications/cancelled's params as
// cancelled and returns the params with its local id, for the SDK to
// cancel its handler. Params naming no call in flight are returned as
// they are. The peer's id is free again at once. The call's slot is freed
// too (freed true) while fewer than maxFreed cancelled calls are still
// running: the peer waits for none of them, but a handler stuck for good
// (a read from a dead file system) still holds memory, so their number is
// bounded as well.
func (t *calls) cancel(params json.RawMessage, maxFreed int) (_ json.RawMessage, freed bool) {
	var p map[string]json.RawMessage
	if segjson.Unmarshal(params, &p) != nil || !isID(p["requestId"]) {
		return params, false
	}
	key := idKey(p["requestId"])
	t.mu.Lock()
	local, ok := t.live[key]
	if ok {
		delete(t.live, key)
		c := t.byID[local]
		c.cancelled = true
		if t.freed < maxFreed {
			c.freed, freed = true, true
			t.freed++
		} else {
			t.gone++
		}
	}
	t.mu.Unlock()
	if !ok {
		return params, false
	}
	p["requestId"] = json.RawMessage(strconv.FormatInt(local, 10))
	b, err := json.Marshal(p)
	if err != nil {
		return params, freed
	}
	return b, freed
}

// answer takes the call a response with local id answers. It returns the
// peer's id, send false when the peer cancelled the call, and freed true
// when the call's slot was freed already. A response to no call the table
// holds is sent as it is (raw nil).
func (t *calls) answer(id jsonrpc.ID) (raw json.RawMessage, local int64, send, freed bool) {
	n, ok := id.Raw().(int64)
	if !ok {
		return nil, 0, true, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.byID[n]
	if !ok {
		return nil, 0, true, false
	}
	delete(t.byID, n)
	switch {
	case c.freed:
		t.freed--
	case c.cancelled:
		t.gone--
	default:
		// The peer may reuse the id as soon as it reads the response.
		delete(t.live, c.key)
	}
	return c.raw, n, !c.cancelled, c.freed
}

// cancelled is the number of calls cancelled and not yet answered that
// still hold a slot: no one waits for their answers.
func (t *calls) cancelled() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.gone
}

// withID replaces the local id at the start of an encoded response with the
// peer's.
func withID(b []byte, local int64, raw json.RawMessage) ([]byte, error) {
	prefix := `{"jsonrpc":"2.0","id":` + strconv.FormatInt(local, 10) + ","
	if !bytes.HasPrefix(b, []byte(prefix)) {
		return nil, fmt.Errorf("jsonl: encoded response does not start with its id: %.60q", b)
	}
	out := make([]byte, 0, len(b)-len(prefix)+len(raw)+24)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, raw...)
	out = append(out, ',')
	return append(out, b[len(prefix):]...), nil
}
