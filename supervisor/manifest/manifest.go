// Package manifest loads and validates a supervisor manifest (version 1):
// the roots to serve, each with its folder, include and exclude globs, tool
// mask, limits, cursor-key variable and call timeout.
//
// It refuses everything a worker would refuse at startup, with the same
// checks (internal/glob, internal/limits, internal/toolset), so a manifest
// that passes starts. Every error names the file, the line and the field
// as the user wrote them, and says what is accepted; Parse reports every
// error it finds, not the first.
package manifest

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fsmcp/fsmcp/internal/limits"
	"github.com/fsmcp/fsmcp/internal/profile"
	"github.com/fsmcp/fsmcp/internal/toolset"
)

// Version is the only manifest version understood.
const Version = 1

// Root is one validated root entry.
type Root struct {
	Name           string
	Path           string // absolute, cleaned
	Include        []string
	Exclude        []string
	DefaultExclude bool
	Tools          toolset.Mask
	Limits         map[string]int64 // limit key (limits.Table) -> value, as the manifest sets them
	CursorKeyEnv   string
	// CallTimeout bounds one tool call to the root: past it the call is
	// cancelled in the worker and answered with a tool error.
	CallTimeout   time.Duration
	Line          int // line of the entry in the manifest
	cursorKeyLine int
}

// Values are the root's limits: the manifest's, and the defaults for the
// rest.
func (r Root) Values() limits.Limits {
	v := limits.Default
	for _, l := range limits.Table {
		if x, ok := r.Limits[l.Key]; ok {
			l.Set(&v, x)
		}
	}
	return v
}

// Manifest is a validated manifest.
type Manifest struct {
	File  string
	Roots []Root
	// Versions are the protocol revisions the supervisor serves hosts,
	// newest first; nil: every revision it can (both eras).
	Versions []string
}

// Error is a manifest error located at a line and field.
type Error struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every error found in one manifest, in the order found.
type Errors []*Error

// Error is the first error, with the count of the others: the one line a
// failed startup prints. Each error has its own line in check's report.
func (es Errors) Error() string {
	if len(es) == 1 {
		return es[0].Error()
	}
	return fmt.Sprintf("%s (and %d more; fsmcp-supervisor check lists them)", es[0].Error(), len(es)-1)
}

// Load reads and validates the manifest at file. Relative root paths are
// resolved against the manifest's folder. Errors are Errors.
func Load(file string) (*Manifest, error) {
	data, err := Read(file)
	if err != nil {
		return nil, err
	}
	return Parse(file, data)
}

// Read is the content of the manifest file, read as Load reads it: a
// regular file of at most MaxBytes. Its error is Errors.
func Read(file string) ([]byte, error) {
	data, err := read(file)
	if err != nil {
		return nil, Errors{{File: file, Msg: err.Error()}}
	}
	return data, nil
}

// The keys a manifest and a root entry take.
var (
	topKeys  = []string{"version", "protocol_versions", "roots"}
	rootKeys = []string{"name", "path", "include", "exclude", "default_exclude", "tools", "limits", "cursor_key_env", "call_timeout"}
)

// Parse validates manifest bytes as if read from file. It reports every
// error it finds (Errors), in the order of their lines: unknown and
// repeated keys, values of the wrong type, and every problem of every
// root.
func Parse(file string, data []byte) (*Manifest, error) {
	c := &checker{file: file}
	top := c.document(data)
	if top == nil {
		return nil, c.errs
	}
	f := c.mapping(top, "", topKeys, "key")
	c.version(top, f.get("version"))
	versions := c.protocolVersions(f.get("protocol_versions"))
	items := c.roots(top, f.get("roots"))
	base := filepath.Dir(file)
	m := &Manifest{File: file, Versions: versions}
	first := map[string]int{}
	for i, item := range items {
		r, ok := c.root(base, i, item)
		if r.Name == "" {
			continue
		}
		if line, dup := first[r.Name]; dup {
			c.add(r.nameLine, field(i, "name"), "duplicate root name %q (first declared at line %d); give each root its own name", r.Name, line)
			continue
		}
		first[r.Name] = r.nameLine
		if ok {
			m.Roots = append(m.Roots, r.Root)
		}
	}
	if len(c.errs) > 0 {
		// In the order of the file, as an editor lists them.
		slices.SortStableFunc(c.errs, func(a, b *Error) int { return a.Line - b.Line })
		return nil, c.errs
	}
	return m, nil
}

// version checks the manifest's version.
func (c *checker) version(top *node, v *entry) {
	if v == nil {
		c.add(top.Line, "version", "missing; start the manifest with version: %d", Version)
		return
	}
	s, ok := c.scalar(v, "version", fmt.Sprintf("version: %d", Version))
	if ok && s != strconv.Itoa(Version) {
		c.add(v.val.Line, "version", "%s is not supported; this supervisor reads version: %d", quoteIfNeeded(s), Version)
	}
}

// protocolVersions checks protocol_versions, the revisions served to
// hosts (internal/profile.Revisions), and returns them newest first.
func (c *checker) protocolVersions(e *entry) []string {
	if e == nil {
		return nil
	}
	const want = `a list of protocol revisions, such as ["2026-07-28", "2025-11-25"]; leave it out to serve hosts of both eras`
	switch {
	case isNull(e.val):
		c.add(e.key.Line, "protocol_versions", "has no value; give %s", want)
		return nil
	case e.val.Kind != seqKind:
		c.add(e.val.Line, "protocol_versions", "must be %s", want)
		return nil
	case len(e.val.Content) == 0:
		c.add(e.val.Line, "protocol_versions", "%s", profile.CheckVersions(nil))
		return nil
	}
	var versions []string
	for j, v := range e.val.Content {
		v = resolve(v)
		f := fmt.Sprintf("protocol_versions[%d]", j)
		if v.Kind != scalarKind || isNull(v) {
			c.add(v.Line, f, "must be a revision such as \"2025-11-25\", not %s", kindName(v))
			return nil
		}
		if err := profile.CheckVersions(append(versions, v.Value)); err != nil {
			c.add(v.Line, f, "%s", err)
			return nil
		}
		versions = append(versions, v.Value)
	}
	return profile.Newest(versions)
}

// roots checks the roots list and returns its entries.
func (c *checker) roots(top *node, v *entry) []*node {
	const want = "a list of roots, each starting with \"- name:\""
	switch {
	case v == nil:
		c.add(top.Line, "roots", "missing; add roots: with at least one root")
		return nil
	case isNull(v.val):
		c.add(v.val.Line, "roots", "no roots declared; add at least one")
		return nil
	case v.val.Kind != seqKind:
		c.add(v.val.Line, "roots", "must be %s, not %s", want, kindName(v.val))
		return nil
	case len(v.val.Content) == 0:
		c.add(v.val.Line, "roots", "no roots declared; add at least one")
	}
	return v.val.Content
}

// CheckEnv verifies each root's cursor key in the environment seen through
// lookup: the variable is set and holds a key (internal/cursorkey).
func (m *Manifest) CheckEnv(lookup func(string) (string, bool)) error {
	var errs Errors
	for i, r := range m.Roots {
		if r.CursorKeyEnv == "" {
			continue
		}
		if msg := keyProblem(r.CursorKeyEnv, lookup); msg != "" {
			f := field(i, "cursor_key_env")
			if m.File == "" { // FromFlags
				f = optionOf(f)
			}
			errs = append(errs, &Error{File: m.File, Line: r.cursorKeyLine, Field: f, Msg: msg})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

func field(i int, key string) string { return fmt.Sprintf("roots[%d].%s", i, key) }
