package manifest

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v3"

	"github.com/fsmcp/fsmcp/internal/limits"
	"github.com/fsmcp/fsmcp/internal/names"
	"github.com/fsmcp/fsmcp/internal/profile"
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

// TestSchemaNamesMatchLoader: the schema offers exactly the limits, tool
// names, protocol revisions and name patterns the loader accepts, with the
// limits' ranges, defaults and meanings, so editor completion and hover
// cannot drift.
func TestSchemaNamesMatchLoader(t *testing.T) {
	s := loadSchema(t)
	root := s.Properties["roots"].Items
	props := root.Properties["limits"].Properties
	if got := slices.Sorted(maps.Keys(props)); !slices.Equal(got, slices.Sorted(slices.Values(limits.Keys()))) {
		t.Errorf("schema limits %v, table %v", got, limits.Keys())
	}
	for _, l := range limits.Table {
		p := props[l.Key]
		if p == nil {
			continue
		}
		want := strings.ToUpper(l.Doc[:1]) + l.Doc[1:] + "."
		if l.NoCap {
			want += " Unset: no cap."
		}
		var def *int64
		if p.Default != nil {
			def = new(int64)
			if err := json.Unmarshal(p.Default, def); err != nil {
				t.Errorf("%s: default %s: %v", l.Key, p.Default, err)
			}
		}
		switch {
		case p.Type != "integer":
			t.Errorf("%s: type %q, want integer", l.Key, p.Type)
		case p.Minimum == nil || int64(*p.Minimum) != l.Min:
			t.Errorf("%s: minimum %s, table %d", l.Key, number(p.Minimum), l.Min)
		case p.Maximum == nil || int64(*p.Maximum) != l.Max:
			t.Errorf("%s: maximum %s, table %d", l.Key, number(p.Maximum), l.Max)
		case l.NoCap != (def == nil) || (def != nil && *def != l.Default):
			t.Errorf("%s: default %s, table %s", l.Key, p.Default, l.DefaultText())
		case p.Description != want:
			t.Errorf("%s: description %q, want %q", l.Key, p.Description, want)
		}
	}
	var tools []string
	for _, v := range root.Properties["tools"].OneOf[1].Items.Enum {
		tools = append(tools, v.(string))
	}
	if !slices.Equal(tools, toolset.All) {
		t.Errorf("schema tools %v, worker %v", tools, toolset.All)
	}
	if got, want := root.Properties["name"].Pattern, "^"+names.RootPattern+"$"; got != want {
		t.Errorf("name pattern %q, want %q", got, want)
	}
	if got, want := root.Properties["cursor_key_env"].Pattern, "^"+names.EnvPattern+"$"; got != want {
		t.Errorf("cursor_key_env pattern %q, want %q", got, want)
	}
	ct := root.Properties["call_timeout"]
	if got, want := string(ct.Default), `"`+limits.DefaultCallTimeout.String()+`"`; got != want {
		t.Errorf("call_timeout default %s, want %s", got, want)
	}
	if want := "(" + limits.CallTimeoutRange() + ","; !strings.Contains(ct.Description, want) {
		t.Errorf("call_timeout description %q does not give the range %q", ct.Description, want)
	}
	var versions []string
	for _, v := range s.Properties["protocol_versions"].Items.Enum {
		versions = append(versions, v.(string))
	}
	if !slices.Equal(versions, profile.Revisions) {
		t.Errorf("schema protocol_versions %v, served %v", versions, profile.Revisions)
	}
}

// number prints a schema bound, or "none".
func number(f *float64) string {
	if f == nil {
		return "none"
	}
	return strconv.FormatFloat(*f, 'f', -1, 64)
}

// TestExamplesMatchSchema: the example manifests satisfy the published JSON
// Schema, and the schema rejects what the loader rejects structurally. It
// asks for the canonical spellings: numbers and booleans unquoted, which
// the loader also takes quoted (TestQuotedAlike).
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
		{"boolean", "version: 1\nroots: [{name: a, path: x, include: ['**'], tools: read, default_exclude: false}]\n", true},
		{"boolean quoted", "version: 1\nroots: [{name: a, path: x, include: ['**'], tools: read, default_exclude: 'false'}]\n", false},
		{"limit quoted", "version: 1\nroots: [{name: a, path: x, include: ['**'], tools: read, limits: {max_files: '10'}}]\n", false},
		{"protocol versions", "version: 1\nprotocol_versions: ['2026-07-28', '2025-03-26']\nroots: [{name: a, path: x, include: ['**'], tools: read}]\n", true},
		{"protocol version unknown", "version: 1\nprotocol_versions: ['2024-11-05']\nroots: [{name: a, path: x, include: ['**'], tools: read}]\n", false},
		{"protocol versions empty", "version: 1\nprotocol_versions: []\nroots: [{name: a, path: x, include: ['**'], tools: read}]\n", false},
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
