package jsonl

import (
	"strings"
	"testing"
)

// checkDepthBytewise is checkDepth as it was, a byte at a time: the
// reference the faster one must agree with.
func checkDepthBytewise(data []byte) bool {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > maxDepth {
				return false
			}
		case '}', ']':
			depth--
		}
	}
	return true
}

func TestCheckDepth(t *testing.T) {
	deep := strings.Repeat("[", maxDepth+1)
	tests := []struct {
		name string
		data string
		ok   bool
	}{
		{"flat object", `{"a":1,"b":[1,2]}`, true},
		{"at the limit", strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth), true},
		{"one past the limit", deep, false},
		{"brackets inside a string", `{"a":"` + deep + `"}`, true},
		{"escaped quote inside a string", `{"a":"x\"` + deep + `"}`, true},
		{"escaped backslash ends the string", `{"a":"x\\"` + deep, false},
		{"three backslashes then a quote", `{"a":"x\\\"` + deep + `"}`, true},
		{"string ending in an escaped backslash", `["\\\\",` + deep, false},
		{"unterminated string", `{"a":"` + deep, true},
		{"unterminated after an escape", `{"a":"\`, true},
		{"quote right after the opening one", `{"":` + deep, false},
		{"closing brackets lower the depth", strings.Repeat("[]", 2*maxDepth), true},
		{"empty", ``, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := checkDepth([]byte(tt.data)) == nil; got != tt.ok {
				t.Errorf("checkDepth ok = %v, want %v", got, tt.ok)
			}
			if ref := checkDepthBytewise([]byte(tt.data)); ref != tt.ok {
				t.Errorf("the byte-wise reference says %v, want %v: the case is wrong", ref, tt.ok)
			}
		})
	}
}

func FuzzCheckDepth(f *testing.F) {
	for _, s := range []string{`{"a":"b\"c"}`, `["\\",[[[`, `"\\\"[`, `{"a":[{"b":"]"}]}`, strings.Repeat(`["\"`, 400)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Deep nesting is what the check is about: repeat the input so
		// that the limit is within reach.
		data = []byte(strings.Repeat(string(data), 1+maxDepth/(len(data)+1)))
		if got, want := checkDepth(data) == nil, checkDepthBytewise(data); got != want {
			t.Fatalf("checkDepth ok = %v, the byte-wise check %v, for %q", got, want, data)
		}
	})
}

// depthBenchLine is a read_text_file answer of one 1 KiB chunk.
func depthBenchLine() []byte {
	text := strings.Repeat(`0123456789abcdef fsmcp one-chunk page line\\n`, 24)
	return []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"{\"items\":[{\"byte_offset\":0,\"text\":\"` + text + `\"}]}"}],"structuredContent":{"items":[{"byte_offset":0,"text":"` + text + `"}]}}}`)
}

func BenchmarkCheckDepth(b *testing.B) {
	line := depthBenchLine()
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if err := checkDepth(line); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheckDepthBytewise(b *testing.B) {
	line := depthBenchLine()
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		checkDepthBytewise(line)
	}
}
