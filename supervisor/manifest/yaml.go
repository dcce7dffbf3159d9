package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The manifest is read as a tree of YAML nodes, not decoded into Go types:
// the decoder's type errors name Go types (cannot unmarshal !!map into
// []manifest.rootDoc) and stop at the first unknown key, while a walk over
// the nodes can say, for every field, what was written, where, and what is
// accepted.
type node = yaml.Node

const (
	mapKind    = yaml.MappingNode
	seqKind    = yaml.SequenceNode
	scalarKind = yaml.ScalarNode
)

// checker collects the errors of one manifest, or of one root given by
// command-line options (FromFlags).
type checker struct {
	file  string
	flags bool // the root comes from command-line options, not a file
	errs  Errors
}

// base names what a relative root folder is resolved against.
func (c *checker) base() string {
	if c.flags {
		return "the working directory"
	}
	return "the manifest's folder"
}

// includeHint says how to give the globs a root serves.
func (c *checker) includeHint() string {
	if c.flags {
		return "give at least one --include GLOB, such as --include '**'"
	}
	return `list the globs the root serves, such as ["**"]`
}

func (c *checker) add(line int, field, format string, args ...any) {
	c.errs = append(c.errs, &Error{File: c.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// document parses data as one YAML document and returns its top mapping,
// or nil with the reason recorded.
func (c *checker) document(data []byte) *node {
	var doc node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	err := dec.Decode(&doc)
	switch {
	case errors.Is(err, io.EOF):
		c.add(0, "", "empty manifest; start it with version: %d", Version)
		return nil
	case err != nil:
		c.syntax(err, data)
		return nil
	}
	var next node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		c.syntax(err, data)
		return nil
	default:
		c.add(next.Line, "", "a second YAML document; a manifest is one document, so remove the --- line")
	}
	if len(doc.Content) == 0 {
		c.add(0, "", "empty manifest; start it with version: %d", Version)
		return nil
	}
	top := resolve(doc.Content[0])
	if top.Kind != mapKind {
		c.add(top.Line, "", "the manifest must be a mapping of version: and roots:, not %s", kindName(top))
		return nil
	}
	return top
}

// syntax records a YAML syntax error of data at its line. The decoder
// names no line for a mistake on the first line, nor for an alias (*name)
// of an anchor never set, which is found in data.
func (c *checker) syntax(err error, data []byte) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		c.add(line, "", "not valid YAML: %s", m[2])
		return
	}
	if m := unknownAnchor.FindStringSubmatch(msg); m != nil {
		c.add(aliasLine(data, m[1]), "", "*%s names no anchor; mark the value it stands for with &%s before this line", m[1], m[1])
		return
	}
	c.add(1, "", "not valid YAML: %s", msg)
}

var unknownAnchor = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)

// aliasLine is the line of the first alias *name in data, or 0.
func aliasLine(data []byte, name string) int {
	use := regexp.MustCompile(`\*` + regexp.QuoteMeta(name) + `(?:$|[\s,\]}])`)
	for i, line := range strings.Split(string(data), "\n") {
		if use.MatchString(line) {
			return i + 1
		}
	}
	return 0
}

// entry is one key and its value in a mapping.
type entry struct{ key, val *node }

// fields are a mapping's known keys, by name and in the order written.
type fields struct {
	byKey map[string]*entry
	order []*entry
}

func (f fields) get(key string) *entry { return f.byKey[key] }

// mapping reads mapping n, whose fields are prefix+key. It reports keys
// that are not plain names, not in known (a "key", or whatever noun
// says), or given twice. Keys merged in with <<: *anchor count where the
// mapping does not set them itself.
func (c *checker) mapping(n *node, prefix string, known []string, noun string) fields {
	f := fields{byKey: map[string]*entry{}}
	var merged []*entry
	for j := 0; j+1 < len(n.Content); j += 2 {
		k, v := n.Content[j], resolve(n.Content[j+1])
		switch {
		case k.Kind != scalarKind:
			c.add(k.Line, strings.TrimSuffix(prefix, "."), "a key must be a plain name, such as %s", known[0])
		case k.Tag == "!!merge":
			merged = append(merged, c.merge(v, prefix)...)
		case f.byKey[k.Value] != nil:
			c.add(k.Line, prefix+k.Value, "given twice (first at line %d); keep one", f.byKey[k.Value].key.Line)
		case !slices.Contains(known, k.Value):
			c.add(k.Line, prefix+k.Value, "unknown %s; use %s", noun, orList(known))
		default:
			e := &entry{k, v}
			f.byKey[k.Value] = e
			f.order = append(f.order, e)
		}
	}
	for _, e := range merged {
		if f.byKey[e.key.Value] != nil {
			continue
		}
		if !slices.Contains(known, e.key.Value) {
			c.add(e.key.Line, prefix+e.key.Value, "unknown %s; use %s", noun, orList(known))
			continue
		}
		f.byKey[e.key.Value] = e
		f.order = append(f.order, e)
	}
	return f
}

// merge is the entries a merge key (<<) brings in: those of the mapping
// it names, or of each mapping in a list, the first list item winning.
func (c *checker) merge(v *node, prefix string) []*entry {
	var maps []*node
	switch v.Kind {
	case mapKind:
		maps = []*node{v}
	case seqKind:
		for _, m := range v.Content {
			maps = append(maps, resolve(m))
		}
	}
	var out []*entry
	for _, m := range maps {
		if m.Kind != mapKind {
			c.add(m.Line, strings.TrimSuffix(prefix, ".")+".<<", "must name a mapping (<<: *anchor), not %s", kindName(m))
			continue
		}
		for j := 0; j+1 < len(m.Content); j += 2 {
			out = append(out, &entry{m.Content[j], resolve(m.Content[j+1])})
		}
	}
	return out
}

// scalar is e's value when it is a single value; otherwise it records that
// the field wants want, and reports false.
func (c *checker) scalar(e *entry, field, want string) (string, bool) {
	switch {
	case isNull(e.val):
		c.add(e.key.Line, field, "has no value; give %s", want)
		return "", false
	case e.val.Kind != scalarKind:
		c.add(e.val.Line, field, "must be %s, not %s", want, kindName(e.val))
		return "", false
	}
	return e.val.Value, true
}

// resolve follows an alias (*anchor) to the node it names.
func resolve(n *node) *node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// isNull reports whether n is YAML's null: nothing, null or ~.
func isNull(n *node) bool { return n.Kind == scalarKind && n.Tag == "!!null" }

// kindName says what n is, for a message: a mapping, a list, or the value
// itself.
func kindName(n *node) string {
	switch n.Kind {
	case mapKind:
		return "a mapping"
	case seqKind:
		return "a list"
	}
	return quoteIfNeeded(n.Value)
}

// quoteIfNeeded prints a value as written: numbers bare, other text
// quoted.
func quoteIfNeeded(s string) string {
	if s != "" && strings.Trim(s, "+-0123456789") == "" {
		return s
	}
	return strconv.Quote(s)
}

// orList joins words as "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
