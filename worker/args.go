package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/fsmcp/fsmcp/internal/jsonstr"
	"github.com/fsmcp/fsmcp/worker/cursor"
)

// argSchema is what argument decoding needs of a tool's input schema: the
// argument names it declares and the ones it requires.
type argSchema struct {
	tool     string
	known    []string
	required []string
}

// schemaOf reads a tool's name and JSON input schema.
func schemaOf(tool string, input json.RawMessage) argSchema {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(input, &s); err != nil {
		panic(fmt.Sprintf("input schema of %s: %v", tool, err))
	}
	a := argSchema{tool: tool, required: s.Required}
	for k := range s.Properties {
		a.known = append(a.known, k)
	}
	return a
}

func (a argSchema) schemaError(format string, args ...any) error {
	return schemaError(a.tool, format, args...)
}

// schemaError is the tool error for arguments that break the tool's input
// schema; the text names the argument.
func schemaError(tool, format string, args ...any) error {
	return toolErrorf("Input validation error: Invalid arguments for tool %s: %s", tool, fmt.Sprintf(format, args...))
}

// decode decodes a tool's arguments into the struct into. Keys are matched
// exactly as written; an unknown, duplicate or null argument, a missing
// required one, or a value of the wrong JSON type is a schema error naming
// the argument.
func (a argSchema) decode(raw json.RawMessage, into any) error {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		raw = json.RawMessage("{}") // absent and null arguments are {}
	}
	if !a.plainMembers(raw) {
		// Something to refuse (or keys written with escapes): the
		// member-by-member decoding below finds it and names it.
		if err := a.checkMembers(raw); err != nil {
			return err
		}
	}
	if err := json.Unmarshal(raw, into); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return a.schemaError("%s must be %s", te.Field, jsonKind(te.Type.Kind().String()))
		}
		return a.schemaError("the arguments are not valid")
	}
	return nil
}

// plainMembers reports whether raw is an object whose members all pass
// checkMembers, each key written without escapes: one pass over the bytes
// that allocates nothing, for the arguments of nearly every call. raw
// comes from a parsed message, so it is valid JSON.
func (a argSchema) plainMembers(raw json.RawMessage) bool {
	if len(a.known) > 64 {
		return false
	}
	var seen uint64 // bit i: a.known[i]
	ok := jsonstr.UniqueMembers(raw, func(k, v []byte) bool {
		i := a.index(k[1 : len(k)-1]) // no escapes: UniqueMembers refuses them
		if i < 0 || string(v) == "null" {
			return false
		}
		seen |= 1 << i
		return true
	})
	if !ok {
		return false
	}
	for _, k := range a.required {
		if i := a.index([]byte(k)); i < 0 || seen&(1<<i) == 0 {
			return false
		}
	}
	return true
}

// index returns the index of the argument named key in a.known, or -1.
func (a argSchema) index(key []byte) int {
	for i, name := range a.known {
		if name == string(key) {
			return i
		}
	}
	return -1
}

// checkMembers refuses an argument object with an unknown, duplicate or
// null member, or without a required one, naming the first such argument.
func (a argSchema) checkMembers(raw json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return a.schemaError("the arguments must be a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return a.schemaError("the arguments are not valid JSON")
		}
		key := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return a.schemaError("the arguments are not valid JSON")
		}
		switch {
		case !slices.Contains(a.known, key):
			return a.schemaError("unknown argument %s", strconv.Quote(key))
		case seen[key]:
			return a.schemaError("duplicate argument %s", strconv.Quote(key))
		case string(v) == "null":
			return a.schemaError("%s must not be null", key)
		}
		seen[key] = true
	}
	for _, k := range a.required {
		if !seen[k] {
			return a.schemaError("%s is required", k)
		}
	}
	return nil
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice":
		return "an array"
	case "ptr", "int", "int64":
		return "an integer"
	}
	return "of another type"
}

// integer reads a JSON number that holds an integer (2 and 2.0 alike),
// saturating at the int64 range.
func integer(v json.RawMessage) (int64, bool) {
	var f float64
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) || json.Unmarshal(v, &f) != nil || f != math.Trunc(f) {
		return 0, false
	}
	if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		return n, true
	}
	return int64(max(min(f, math.MaxInt64), math.MinInt64)), true
}

// pageLimit reads a limit argument: absent means def; it must be an
// integer of at least 1. A larger value than max is clamped to max when
// clamp is set, and refused otherwise.
func pageLimit(tool string, v json.RawMessage, def, max int, clamp bool) (int, error) {
	if v == nil {
		return def, nil
	}
	n, ok := integer(v)
	switch {
	case !ok || n < 1:
		return 0, schemaError(tool, "limit must be an integer of at least 1")
	case n > int64(max) && clamp:
		return max, nil
	case n > int64(max):
		return 0, schemaError(tool, "limit must be an integer from 1 to %d", max)
	}
	return int(n), nil
}

// cursorArg reads a cursor argument: absent is "", a present one must be a
// non-empty string.
func cursorArg(v json.RawMessage) (tok string, present bool, err error) {
	if v == nil {
		return "", false, nil
	}
	if json.Unmarshal(v, &tok) != nil || tok == "" {
		return "", true, toolErrorf("%v", cursor.ErrInvalid)
	}
	return tok, true, nil
}
