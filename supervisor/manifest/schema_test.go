package manifest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v3"

	"github.com/fsmcp/fsmcp/internal/toolset"
)

// loadSchema reads the published manifest schema.
func loadSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "manifests", "fsmcp.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("schema: %v", err)
	}
	return &s
}

// TestSchemaNamesMatchLoader: the schema offers exactly the limit keys and
// tool names the loader accepts, so editor completion cannot drift.
func TestSchemaNamesMatchLoader(t *testing.T) {
	s := loadSchema(t)
	root := s.Properties["roots"].Items
	var limits []string
	for k := range root.Properties["limits"].Properties {
		limits = append(limits, k)
	}
	sort.Strings(limits)
	want := slices.Sorted(slices.Values(LimitKeys))
	if !slices.Equal(limits, want) {
		t.Errorf("schema limits %v, loader %v", limits, want)
	}
	var tools []string
	for _, v := range root.Properties["tools"].OneOf[1].Items.Enum {
		tools = append(tools, v.(string))
	}
	if !slices.Equal(tools, toolset.All) {
		t.Errorf("schema tools %v, worker %v", tools, toolset.All)
	}
}

// TestExamplesMatchSchema: the example manifests satisfy the published JSON
// Schema, and the schema rejects what the loader rejects structurally.
func TestExamplesMatchSchema(t *testing.T) {
	s := loadSchema(t)
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("resolve schema: %v", err)
	}
	examples, _ := filepath.Glob(filepath.Join("..", "..", "manifests", "*.yaml"))
	if len(examples) < 3 {
		t.Fatalf("examples %v, want at least 3", examples)
	}
	tests := []struct {
		name  string
		yaml  string
		valid bool
	}{
		{"unknown key", "version: 1\nroots: [{name: a, path: x, include: ['**'], tools: read, colour: red}]\n", false},
		{"bad name", "version: 1\nroots: [{name: A, path: x, include: ['**'], tools: read}]\n", false},
		{"unknown tool", "version: 1\nroots: [{name: a, path: x, include: ['**'], tools: [rm]}]\n", false},
		{"unknown limit", "version: 1\nroots: [{name: a, path: x, include: ['**'], tools: read, limits: {max_speed: 1}}]\n", false},
		{"version 2", "version: 2\nroots: [{name: a, path: x, include: ['**'], tools: read}]\n", false},
		{"call timeout", "version: 1\nroots: [{name: a, path: x, include: ['**'], tools: read, call_timeout: 1m30s}]\n", true},
		{"call timeout without unit", "version: 1\nroots: [{name: a, path: x, include: ['**'], tools: read, call_timeout: 30}]\n", false},
		{"max_depth 0", "version: 1\nroots: [{name: a, path: x, include: ['**'], tools: read, limits: {max_depth: 0}}]\n", true},
		{"scan budget below the worker's", "version: 1\nroots: [{name: a, path: x, include: ['**'], tools: read, limits: {max_scan_bytes: 100}}]\n", false},
		{"minimal", "version: 1\nroots: [{name: a, path: x, include: ['**'], tools: read}]\n", true},
	}
	for _, e := range examples {
		b, err := os.ReadFile(e)
		if err != nil {
			t.Fatal(err)
		}
		tests = append(tests, struct {
			name  string
			yaml  string
			valid bool
		}{filepath.Base(e), string(b), true})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var v any
			if err := yaml.Unmarshal([]byte(tc.yaml), &v); err != nil {
				t.Fatal(err)
			}
			// Round-trip through JSON so the instance has JSON types.
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			var inst any
			if err := json.Unmarshal(b, &inst); err != nil {
				t.Fatal(err)
			}
			err = rs.Validate(inst)
			if tc.valid && err != nil {
				t.Errorf("rejected: %v", err)
			}
			if !tc.valid && err == nil {
				t.Errorf("accepted")
			}
		})
	}
}
