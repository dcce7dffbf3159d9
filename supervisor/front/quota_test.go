package front

import (
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestQuotas: a root takes RootCalls relayed calls at once and the
// supervisor GlobalCalls; past either a call is refused with its reason,
// and a call that ends gives its slot back.
func TestQuotas(t *testing.T) {
	var rd relayed
	n := 0
	admit := func(root string) string {
		n++
		id, err := jsonrpc.MakeID(float64(n))
		if err != nil {
			t.Fatal(err)
		}
		return rd.admit(root, id, func() {})
	}
	for i := range RootCalls {
		if why := admit("a"); why != "" {
			t.Fatalf("call %d to a refused: %s", i+1, why)
		}
	}
	if why := admit("a"); !strings.Contains(why, fmt.Sprintf("root a has %d calls in flight", RootCalls)) {
		t.Fatalf("call past a's quota: %q", why)
	}
	first, _ := jsonrpc.MakeID(float64(1))
	rd.done("a", first)
	if why := admit("a"); why != "" {
		t.Fatalf("call to a after one ended: %s", why)
	}
	for i := 0; rd.total < GlobalCalls; i++ {
		if why := admit(fmt.Sprintf("r%d", i/RootCalls)); why != "" {
			t.Fatalf("call %d refused below the global cap: %s", rd.total+1, why)
		}
	}
	if why := admit("fresh"); !strings.Contains(why, fmt.Sprintf("the supervisor has %d calls in flight", GlobalCalls)) {
		t.Fatalf("call past the global cap: %q", why)
	}
}
