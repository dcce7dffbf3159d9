package worker

import (
	"encoding/json"
	"strings"
	"testing"
)

// decode answers the same whether the arguments take the one-pass check
// (plain keys) or the member-by-member one (keys with escapes, or
// something to refuse).
func TestArgSchemaDecode(t *testing.T) {
	s := argSchema{tool: "search_text", known: []string{"query", "any_of", "case_insensitive", "path", "cursor", "limit"}, required: []string{"path"}}
	for _, tc := range []struct {
		name, raw string
		wantPath  string
		wantErr   string // a part of the error; "" for none
	}{
		{"plain", `{"path":"a.txt","query":"x"}`, "a.txt", ""},
		{"white space", " {\n \"path\" : \"a.txt\" } ", "a.txt", ""},
		{"a key written with an escape", `{"p\u0061th":"a.txt"}`, "a.txt", ""},
		{"unknown", `{"path":"a.txt","bogus":1}`, "", `unknown argument "bogus"`},
		{"case differs", `{"Path":"a.txt"}`, "", `unknown argument "Path"`},
		{"duplicate", `{"path":"a.txt","path":"b.txt"}`, "", `duplicate argument "path"`},
		{"duplicate through an escape", `{"path":"a.txt","p\u0061th":"b.txt"}`, "", `duplicate argument "path"`},
		{"null", `{"path":"a.txt","limit":null}`, "", "limit must not be null"},
		{"missing required", `{"query":"x"}`, "", "path is required"},
		{"absent arguments", ``, "", "path is required"},
		{"wrong type", `{"path":5}`, "", "path must be a string"},
		{"not an object", `["path"]`, "", "must be a JSON object"},
		{"an unknown one after all the known ones", `{"path":"a","query":"b","any_of":[],"case_insensitive":true,"cursor":"c","limit":1,"x1":1,"x2":2,"x3":3}`, "", `unknown argument "x1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a searchArgs
			err := s.decode(json.RawMessage(tc.raw), &a)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("decode: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("decode: %v, want an error with %q", err, tc.wantErr)
			case tc.wantErr == "" && a.Path != tc.wantPath:
				t.Fatalf("path %q, want %q", a.Path, tc.wantPath)
			}
		})
	}
}
