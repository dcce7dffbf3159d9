// Package manifest loads and validates a supervisor manifest (version 1):
// the roots to serve, each with its folder, include and exclude globs, tool
// mask, limits and cursor-key variable. Every error names the file, the line
// and the field.
package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/fsmcp/fsmcp/internal/limits"
	"github.com/fsmcp/fsmcp/internal/names"
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
	Limits         map[string]int64 // snake_case limit key -> value
	CursorKeyEnv   string
	// CallTimeout bounds one tool call to the root: past it the call is
	// cancelled in the worker and answered with a tool error.
	CallTimeout   time.Duration
	Line          int // line of the entry in the manifest
	cursorKeyLine int
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

var (
	yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	notFound = regexp.MustCompile(`^field (\S+) not found in type \S+$`)
)

type doc struct {
	Version          *int      `yaml:"version"`
	Roots            []rootDoc `yaml:"roots"`
	ProtocolVersions yaml.Node `yaml:"protocol_versions"`
}

type rootDoc struct {
	Name           string    `yaml:"name"`
	Path           string    `yaml:"path"`
	Include        []string  `yaml:"include"`
	Exclude        []string  `yaml:"exclude"`
	DefaultExclude *bool     `yaml:"default_exclude"`
	Tools          yaml.Node `yaml:"tools"`
	Limits         yaml.Node `yaml:"limits"`
	CursorKeyEnv   string    `yaml:"cursor_key_env"`
	CallTimeout    string    `yaml:"call_timeout"`
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
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, Errors{{File: file, Msg: "cannot read manifest: " + errText(err)}}
	}
	return Parse(file, data)
}

// Parse validates manifest bytes as if read from file. It reports every
// error it finds (Errors): all of the YAML decoder's, or else every
// problem of every root.
func Parse(file string, data []byte) (*Manifest, error) {
	var d doc
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&d); err != nil {
		return nil, yamlErrors(file, err)
	}
	var tree yaml.Node
	if err := yaml.Unmarshal(data, &tree); err != nil {
		return nil, yamlErrors(file, err)
	}
	top := mappingOf(&tree)
	var errs Errors
	switch {
	case d.Version == nil:
		errs = append(errs, &Error{File: file, Line: 1, Field: "version", Msg: "missing; this supervisor reads version: 1"})
	case *d.Version != Version:
		errs = append(errs, &Error{File: file, Line: keyLine(top, "version"), Field: "version", Msg: fmt.Sprintf("version %d is not supported; this supervisor reads version: 1", *d.Version)})
	}
	var versions []string
	if n := &d.ProtocolVersions; n.Kind != 0 {
		var err error
		if versions, err = parseVersions(n); err != nil {
			errs = append(errs, &Error{File: file, Line: n.Line, Field: "protocol_versions", Msg: err.Error()})
		}
	}
	if len(d.Roots) == 0 {
		errs = append(errs, &Error{File: file, Line: keyLine(top, "roots"), Field: "roots", Msg: "no roots declared; add at least one"})
	}
	var items []*yaml.Node
	if n := valueOf(top, "roots"); n != nil {
		items = n.Content
	}
	base := filepath.Dir(file)
	m := &Manifest{File: file, Versions: versions}
	seen := map[string]int{}
	for i, rd := range d.Roots {
		var item *yaml.Node
		if i < len(items) {
			item = items[i]
		}
		r, rootErrs := checkRoot(file, base, i, rd, item)
		errs = append(errs, rootErrs...)
		if !names.Root(r.Name) {
			continue
		}
		if prev, dup := seen[r.Name]; dup {
			errs = append(errs, &Error{File: file, Line: keyLine(item, "name"), Field: field(i, "name"), Msg: fmt.Sprintf("duplicate root name %q (first declared at line %d)", r.Name, prev)})
			continue
		}
		seen[r.Name] = keyLine(item, "name")
		m.Roots = append(m.Roots, r)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return m, nil
}

// CheckEnv verifies that every root's cursor-key variable is set in the
// environment seen through lookup.
func (m *Manifest) CheckEnv(lookup func(string) (string, bool)) error {
	var errs Errors
	for i, r := range m.Roots {
		if r.CursorKeyEnv == "" {
			continue
		}
		if v, ok := lookup(r.CursorKeyEnv); !ok || v == "" {
			f := field(i, "cursor_key_env")
			if m.File == "" { // FromFlags
				f = optionOf(f)
			}
			errs = append(errs, &Error{File: m.File, Line: r.cursorKeyLine, Field: f, Msg: fmt.Sprintf("environment variable %s is not set", r.CursorKeyEnv)})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// checkRoot validates one root entry and returns every problem it has.
func checkRoot(file, base string, i int, rd rootDoc, item *yaml.Node) (Root, Errors) {
	var errs Errors
	bad := func(key, format string, args ...any) {
		errs = append(errs, &Error{File: file, Line: keyLine(item, key), Field: field(i, key), Msg: fmt.Sprintf(format, args...)})
	}
	r := Root{Name: rd.Name, Include: rd.Include, Exclude: rd.Exclude, DefaultExclude: true, CursorKeyEnv: rd.CursorKeyEnv, Line: lineOf(item), cursorKeyLine: keyLine(item, "cursor_key_env")}
	switch {
	case rd.Name == "":
		bad("name", "missing; give the root a name matching %s", names.RootPattern)
	case !names.Root(rd.Name):
		bad("name", "%q is not a valid root name; use %s", rd.Name, names.RootPattern)
	}
	r.Path = checkPath(rd.Path, base, bad)
	if len(rd.Include) == 0 {
		bad("include", "missing; list at least one glob the root serves, such as \"**\"")
	}
	blank := func(g string) bool { return strings.TrimSpace(g) == "" }
	if slices.ContainsFunc(rd.Include, blank) {
		bad("include", "empty glob")
	}
	if slices.ContainsFunc(rd.Exclude, blank) {
		bad("exclude", "empty glob")
	}
	if rd.DefaultExclude != nil {
		r.DefaultExclude = *rd.DefaultExclude
	}
	var err error
	r.Tools, err = parseTools(&rd.Tools)
	switch {
	case err != nil:
		bad("tools", "%s", err)
	case len(rd.Include) > 0 && r.Tools.Has(toolset.WriteTextFile) && !reachesTop(rd.Include):
		bad("include", "the mask grants %s but no include pattern matches a file in the root itself; add \"**\" or a root-level pattern such as \"*.md\"", toolset.WriteTextFile)
	}
	var limitErrs Errors
	r.Limits, limitErrs = parseLimits(file, i, &rd.Limits)
	errs = append(errs, limitErrs...)
	if rd.CursorKeyEnv != "" && !names.Env(rd.CursorKeyEnv) {
		bad("cursor_key_env", "%q is not an environment variable name", rd.CursorKeyEnv)
	}
	r.CallTimeout = limits.DefaultCallTimeout
	if rd.CallTimeout != "" {
		d, err := time.ParseDuration(rd.CallTimeout)
		if err != nil || d < limits.MinCallTimeout || d > limits.MaxCallTimeout {
			bad("call_timeout", "%q is not a duration from %s, such as 30s or 2m", rd.CallTimeout, limits.CallTimeoutRange())
		} else {
			r.CallTimeout = d
		}
	}
	if len(errs) == 0 {
		if size, limit := argBytes(r.Args()), argLimit(); size > limit {
			errs = append(errs, &Error{File: file, Line: lineOf(item), Field: fmt.Sprintf("roots[%d]", i), Msg: fmt.Sprintf("the worker's command line would take %d bytes, above this system's limit of %d (ARG_MAX, with %d kept for its environment); use fewer or shorter globs", size, limit, envReserve)})
		} else if long := longestArg(r.Args()); long > maxArgStrlen {
			errs = append(errs, &Error{File: file, Line: lineOf(item), Field: fmt.Sprintf("roots[%d]", i), Msg: fmt.Sprintf("one worker argument would be %d bytes, above the kernel's limit of %d for a single argument; shorten it", long, maxArgStrlen)})
		}
	}
	return r, errs
}

// checkPath resolves a root's folder against the manifest's and checks that
// it is one.
func checkPath(p, base string, bad func(key, format string, args ...any)) string {
	if p == "" {
		bad("path", "missing; give the root's folder, relative to the manifest or absolute")
		return ""
	}
	full := p
	if !filepath.IsAbs(full) {
		full = filepath.Join(base, full)
	}
	abs, err := filepath.Abs(full)
	if err != nil {
		bad("path", "cannot resolve %q: %s", p, errText(err))
		return ""
	}
	st, err := os.Lstat(abs)
	switch {
	case err != nil:
		bad("path", "root folder %q does not exist or cannot be read: %s", p, errText(err))
	case st.Mode()&os.ModeSymlink != 0:
		bad("path", "%q is a symbolic link; name the folder it points to (a worker refuses a linked root)", p)
	case !st.IsDir():
		bad("path", "%q is not a folder", p)
	}
	return abs
}

func parseTools(n *yaml.Node) (toolset.Mask, error) {
	switch n.Kind {
	case 0:
		return nil, errors.New("missing; use read, write, all or a list of tool names")
	case yaml.ScalarNode:
		if n.Tag == "!!null" || n.Value == "" {
			return nil, errors.New("missing; use read, write, all or a list of tool names")
		}
		return toolset.Parse(n.Value)
	case yaml.SequenceNode:
		var names []string
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: a tool name must be a plain string", c.Line)
			}
			names = append(names, c.Value)
		}
		return toolset.FromList(names)
	}
	return nil, errors.New("use read, write, all or a list of tool names")
}

// parseVersions reads protocol_versions: a list of revisions the
// supervisor serves, from profile.Revisions.
func parseVersions(n *yaml.Node) ([]string, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("must be a list of protocol revisions, such as [\"2026-07-28\", \"2025-11-25\"]; leave it out to serve hosts of both eras")
	}
	var versions []string
	for _, c := range n.Content {
		if c.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("line %d: a revision must be a plain string such as \"2025-11-25\"", c.Line)
		}
		versions = append(versions, c.Value)
	}
	if err := profile.CheckVersions(versions); err != nil {
		return nil, err
	}
	return profile.Newest(versions), nil
}

func parseLimits(file string, i int, n *yaml.Node) (map[string]int64, Errors) {
	out := map[string]int64{}
	if n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return out, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, Errors{{File: file, Line: n.Line, Field: field(i, "limits"), Msg: "must be a mapping of limit names to numbers"}}
	}
	var errs Errors
	for j := 0; j+1 < len(n.Content); j += 2 {
		k, v := n.Content[j], n.Content[j+1]
		f := field(i, "limits."+k.Value)
		lim, ok := limits.Lookup(k.Value)
		if !ok {
			errs = append(errs, &Error{File: file, Line: k.Line, Field: f, Msg: fmt.Sprintf("unknown limit; use one of %s", strings.Join(limits.Keys(), ", "))})
			continue
		}
		x, err := strconv.ParseInt(v.Value, 10, 64)
		if v.Kind != yaml.ScalarNode || err != nil || x < 0 {
			errs = append(errs, &Error{File: file, Line: v.Line, Field: f, Msg: fmt.Sprintf("%q is not a whole number", v.Value)})
			continue
		}
		if err := lim.Check(x); err != nil {
			msg, _ := strings.CutPrefix(err.Error(), "limits are not valid: ")
			errs = append(errs, &Error{File: file, Line: v.Line, Field: f, Msg: msg})
			continue
		}
		out[k.Value] = x
	}
	return out, errs
}

// reachesTop reports whether some include glob can match a file directly in
// the root: "**" itself, or a single segment after any number of leading
// "**/" segments ("*.md", "**/*.md"). "lib/**" reaches only below lib.
func reachesTop(include []string) bool {
	for _, g := range include {
		rest := strings.TrimPrefix(g, "./")
		for strings.HasPrefix(rest, "**/") {
			rest = strings.TrimPrefix(rest, "**/")
		}
		if rest != "" && !strings.Contains(rest, "/") {
			return true
		}
	}
	return false
}

// Args renders the worker command-line arguments for r: its folder, name,
// tool mask, globs, limits and cursor-key variable.
func (r Root) Args() []string {
	args := []string{"--root", r.Path, "--name", r.Name, "--tools", r.Tools.String()}
	for _, g := range r.Include {
		args = append(args, "--include", g)
	}
	for _, g := range r.Exclude {
		args = append(args, "--exclude", g)
	}
	if !r.DefaultExclude {
		args = append(args, "--no-default-exclude")
	}
	for _, l := range limits.Table {
		if v, ok := r.Limits[l.Key]; ok {
			args = append(args, l.Flag(), strconv.FormatInt(v, 10))
		}
	}
	if r.CursorKeyEnv != "" {
		args = append(args, "--cursor-key-env", r.CursorKeyEnv)
	}
	return args
}

// yamlErrors turns the decoder's error into Errors, one for each problem
// it lists.
func yamlErrors(file string, err error) Errors {
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	var errs Errors
	for _, msg := range msgs {
		e := &Error{File: file, Msg: msg}
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Msg = m[2]
			if f := notFound.FindStringSubmatch(m[2]); f != nil {
				e.Field = f[1]
				e.Msg = "unknown key; see the manifest reference for the accepted keys"
			}
		} else if msg == "EOF" {
			e.Msg = "empty manifest; start it with version: 1"
		}
		errs = append(errs, e)
	}
	return errs
}

func mappingOf(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		return n.Content[0]
	}
	return n
}

func valueOf(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for j := 0; j+1 < len(m.Content); j += 2 {
		if m.Content[j].Value == key {
			return m.Content[j+1]
		}
	}
	return nil
}

// keyLine is the line of key in mapping m, or m's own line when absent.
func keyLine(m *yaml.Node, key string) int {
	if m == nil {
		return 0
	}
	if m.Kind == yaml.MappingNode {
		for j := 0; j+1 < len(m.Content); j += 2 {
			if m.Content[j].Value == key {
				return m.Content[j].Line
			}
		}
	}
	return m.Line
}

func lineOf(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	return n.Line
}

func field(i int, key string) string { return fmt.Sprintf("roots[%d].%s", i, key) }

func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
