package jsonstr

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestEnd(t *testing.T) {
	tests := []struct {
		name string
		data string // the opening quote is data[0]
		want int
	}{
		{"plain", `"abc",1`, 4},
		{"empty string", `"",1`, 1},
		{"escaped quote", `"a\"b"`, 5},
		{"escaped backslash then the end", `"a\\"x"`, 4},
		{"three backslashes then an escaped quote", `"a\\\"b"`, 7},
		{"unterminated", `"abc`, 4},
		{"unterminated after an escaped quote", `"a\"`, 4},
		{"backslashes before the opening quote do not count", `\"a"`, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			from := 1
			if tt.data[0] != '"' {
				from = 2 // the case whose opening quote is data[1]
			}
			if got := End([]byte(tt.data), from); got != tt.want {
				t.Errorf("End(%q, %d) = %d, want %d", tt.data, from, got, tt.want)
			}
		})
	}
}

func TestValueEnd(t *testing.T) {
	tests := []struct {
		name string
		data string
		want int
	}{
		{"string", `"a,b",1`, 5},
		{"string with an escaped quote", `"a\"}",1`, 6},
		{"number", `12.5e3,`, 6},
		{"number at the end", `-7`, 2},
		{"literal before a brace", `true}`, 4},
		{"white space first", "  null ,", 6},
		{"object", `{"a":[1,{"b":"}"}],"c":"]"},1`, 27},
		{"array of strings with brackets", `["[","]"]x`, 9},
		{"empty object", `{}`, 2},
		{"unterminated object", `{"a":1`, -1},
		{"unterminated string", `"abc`, -1},
		{"unterminated string in an array", `["a]`, -1},
		{"nothing", "  ", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ValueEnd([]byte(tt.data), 0); got != tt.want {
				t.Errorf("ValueEnd(%q) = %d, want %d", tt.data, got, tt.want)
			}
		})
	}
}

func TestMembers(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []string // key=value, as written
		ok   bool
	}{
		{"call params", `{"name":"r_read","arguments":{"path":"a,}b"},"_meta":{"k":[1,2]}}`,
			[]string{`"name"="r_read"`, `"arguments"={"path":"a,}b"}`, `"_meta"={"k":[1,2]}`}, true},
		{"white space everywhere", " {\n \"a\" : 1 ,\t\"b\":null } \n", []string{`"a"=1`, `"b"=null`}, true},
		{"escaped key kept as written", `{"na\u006de":"x"}`, []string{`"na\u006de"="x"`}, true},
		{"empty object", ` {} `, nil, true},
		{"duplicate keys both seen", `{"a":1,"a":2}`, []string{`"a"=1`, `"a"=2`}, true},
		{"not an object", `[1]`, nil, false},
		{"no colon", `{"a" 1}`, nil, false},
		{"trailing comma", `{"a":1,}`, []string{`"a"=1`}, false},
		{"data after the object", `{"a":1} x`, []string{`"a"=1`}, false},
		{"unterminated", `{"a":{"b":1}`, []string{`"a"={"b":1}`}, false},
		{"unquoted key", `{a:1}`, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			ok := Members([]byte(tt.data), func(k, v []byte) { got = append(got, string(k)+"="+string(v)) })
			if ok != tt.ok || strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("Members(%q) = %q, %v; want %q, %v", tt.data, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// FuzzMembers: on any valid JSON object, Members reports every member in
// order, its key unquoting to the decoder's and its value the decoder's
// value as written.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, ` {"a" : [1, {"b":"}"}] , "c":"\"", "d":null} `, `{"na\u006de":{"x":[]},"e":-1.5e3}`, `{"a":{},"a":[]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var obj map[string]json.RawMessage
		if !json.Valid(data) || json.Unmarshal(data, &obj) != nil || obj == nil {
			return // Members reads valid objects only
		}
		var keys []string
		var values [][]byte
		if !Members(data, func(k, v []byte) {
			var key string
			if err := json.Unmarshal(k, &key); err != nil {
				t.Fatalf("key %s does not unquote: %v", k, err)
			}
			keys = append(keys, key)
			values = append(values, v)
		}) {
			t.Fatalf("Members(%q) = false for a valid object", data)
		}
		// The decoder keeps the last of repeated keys.
		last := map[string][]byte{}
		for i, k := range keys {
			last[k] = values[i]
		}
		if len(last) != len(obj) {
			t.Fatalf("Members(%q) found keys %q, the decoder %d", data, keys, len(obj))
		}
		for k, v := range obj {
			if got, ok := last[k]; !ok || !bytes.Equal(got, bytes.TrimSpace(v)) {
				t.Fatalf("Members(%q): %q = %q, the decoder %q", data, k, got, v)
			}
		}
	})
}

// FuzzValueEnd: a valid JSON value followed by more data ends where the
// value does.
func FuzzValueEnd(f *testing.F) {
	for _, s := range []string{`1`, `"a\\"`, `[{"a":"]"}]`, ` true `, `{"a":{"b":[1,2,"}"]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		v = bytes.TrimRight(v, " \t\r\n")
		if !json.Valid(v) {
			return
		}
		data := append(append([]byte{}, v...), ",1]"...)
		if got := ValueEnd(data, 0); got != len(v) {
			t.Fatalf("ValueEnd(%q) = %d, want %d", data, got, len(v))
		}
	})
}

func TestUnquote(t *testing.T) {
	tests := []struct {
		name, v, want string
		ok            bool
	}{
		{"plain", `"2026-07-28"`, "2026-07-28", true},
		{"empty", `""`, "", true},
		{"escapes", `"a\u0062\"c"`, `ab"c`, true},
		{"not UTF-8", `"` + "\xcc" + `"`, "\ufffd", true},
		{"a number", `7`, "", false},
		{"null", `null`, "", false},
		{"nothing", ``, "", false},
		{"unterminated", `"ab`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, ok := Unquote([]byte(tt.v)); got != tt.want || ok != tt.ok {
				t.Errorf("Unquote(%q) = %q, %v; want %q, %v", tt.v, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestUniqueMembers(t *testing.T) {
	for _, tt := range []struct {
		data string
		ok   bool
		keys string // the keys fn saw, joined
	}{
		{`{"a":1,"b":{"a":2}}`, true, `"a""b"`},
		{` { } `, true, ``},
		{`{"a":1,"a":2}`, false, `"a"`},
		{`{"a":1,"\u0061":2}`, false, `"a"`},
		{`{"a":1,"refuse":2,"c":3}`, false, `"a""refuse"`},
		{`[1]`, false, ``},
		{`{"a":1`, false, `"a"`},
	} {
		var keys string
		ok := UniqueMembers([]byte(tt.data), func(k, _ []byte) bool {
			keys += string(k)
			return string(k) != `"refuse"`
		})
		if ok != tt.ok || keys != tt.keys {
			t.Errorf("UniqueMembers(%s) = %v, saw %s; want %v, %s", tt.data, ok, keys, tt.ok, tt.keys)
		}
	}
}
