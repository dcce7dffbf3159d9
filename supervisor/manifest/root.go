package manifest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fsmcp/fsmcp/internal/cursorkey"
	"github.com/fsmcp/fsmcp/internal/glob"
	"github.com/fsmcp/fsmcp/internal/limits"
	"github.com/fsmcp/fsmcp/internal/names"
	"github.com/fsmcp/fsmcp/internal/toolset"
)

// parsed is a root entry as read, with the line of its name for the
// duplicate check.
type parsed struct {
	Root
	nameLine int
}

// root checks the i-th root entry. ok reports that it has no error; the
// name is set whenever it is a valid one, so duplicates are found even
// among entries with other errors.
func (c *checker) root(base string, i int, item *node) (r parsed, ok bool) {
	item = resolve(item)
	if item.Kind != mapKind {
		c.add(item.Line, fmt.Sprintf("roots[%d]", i), "must be a mapping with name, path, include and tools, not %s", kindName(item))
		return r, false
	}
	before := len(c.errs)
	f := c.mapping(item, fmt.Sprintf("roots[%d].", i), rootKeys, "key")
	need := func(key, hint string) *entry {
		e := f.get(key)
		if e == nil {
			c.add(item.Line, field(i, key), "missing; %s", hint)
		}
		return e
	}
	r.Root = Root{DefaultExclude: true, Line: item.Line, CallTimeout: limits.DefaultCallTimeout, Limits: map[string]int64{}}
	r.Name, r.nameLine = c.name(i, need("name", "give the root a name matching "+names.RootPattern))
	r.Path = c.path(base, i, need("path", "give the root's folder, relative to "+c.base()+" or absolute"))
	r.Include = c.globs(i, "include", need("include", c.includeHint()))
	r.Exclude = c.globs(i, "exclude", f.get("exclude"))
	if e := f.get("default_exclude"); e != nil {
		r.DefaultExclude = c.boolean(e, field(i, "default_exclude"))
	}
	r.Tools = c.tools(i, need("tools", "use read, write, all or a list of tool names"))
	if e := f.get("limits"); e != nil {
		r.Limits = c.limits(i, e)
	}
	if e := f.get("cursor_key_env"); e != nil {
		r.CursorKeyEnv, r.cursorKeyLine = c.keyEnv(i, e), e.key.Line
	}
	if e := f.get("call_timeout"); e != nil {
		r.CallTimeout = c.callTimeout(i, e)
	}
	if r.Tools.Has(toolset.WriteTextFile) && len(r.Include) > 0 && !reachesTop(r.Include) {
		c.add(f.get("include").key.Line, field(i, "include"), "the mask grants %s but no include pattern matches a file in the root itself (every write lands there); add \"**\" or a root-level pattern such as \"*.md\"", toolset.WriteTextFile)
	}
	if len(c.errs) == before {
		c.argSize(i, item, r.Root)
	}
	return r, len(c.errs) == before
}

// name checks a root's name; it returns "" for a missing or invalid one.
func (c *checker) name(i int, e *entry) (string, int) {
	if e == nil {
		return "", 0
	}
	want := "a name matching " + names.RootPattern + ", such as reader"
	s, ok := c.scalar(e, field(i, "name"), want)
	switch {
	case !ok:
		return "", 0
	case !names.Root(s):
		c.add(e.val.Line, field(i, "name"), "%s is not a valid root name; use %s", quoteIfNeeded(s), want)
		return "", 0
	}
	return s, e.key.Line
}

// path resolves a root's folder against base (the manifest's folder)
// and checks that it is one (and not a symbolic link, which the worker refuses). A
// message that cannot find the folder names the folder tried.
func (c *checker) path(base string, i int, e *entry) string {
	if e == nil {
		return ""
	}
	f := field(i, "path")
	p, ok := c.scalar(e, f, "the root's folder, relative to "+c.base()+" or absolute")
	if !ok {
		return ""
	}
	if p == "" {
		c.add(e.val.Line, f, "is empty; give the root's folder, relative to %s or absolute", c.base())
		return ""
	}
	full := p
	if !filepath.IsAbs(full) {
		full = filepath.Join(base, full)
	}
	abs, err := filepath.Abs(full)
	if err != nil {
		c.add(e.val.Line, f, "cannot resolve %q: %s", p, errText(err))
		return ""
	}
	st, err := os.Lstat(abs)
	switch {
	case err == nil && st.Mode()&os.ModeSymlink != 0:
		target, _ := filepath.EvalSymlinks(abs)
		c.add(e.val.Line, f, "%q (%s) is a symbolic link; name the folder it points to%s, as a worker refuses a linked root", p, abs, suchAs(target))
	case err == nil && !st.IsDir():
		c.add(e.val.Line, f, "%q (%s) is not a folder; give the root's folder", p, abs)
	case os.IsNotExist(err):
		c.add(e.val.Line, f, "root folder %q does not exist (tried %s); %s", p, abs, c.pathHint(p))
	case err != nil:
		c.add(e.val.Line, f, "root folder %q cannot be reached (tried %s): %s", p, abs, errText(err))
	}
	return abs
}

// pathHint says how to write a folder that was not found: ~ and $VAR are
// not expanded, so a path using them is written out.
func (c *checker) pathHint(p string) string {
	hint := "give the folder relative to " + c.base() + " or absolute"
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		home, err := os.UserHomeDir()
		if err != nil {
			return "~ is not expanded; " + hint
		}
		return "~ is not expanded; " + hint + suchAs(filepath.Join(home, strings.TrimPrefix(p, "~")))
	case strings.Contains(p, "$"):
		return "environment variables are not expanded; " + hint + suchAs(os.ExpandEnv(p))
	}
	return hint
}

// suchAs is ", such as "p"" for a non-empty p.
func suchAs(p string) string {
	if p == "" {
		return ""
	}
	return fmt.Sprintf(", such as %q", p)
}

// globs checks an include or exclude list: each glob compiles as the
// worker compiles it.
func (c *checker) globs(i int, key string, e *entry) []string {
	if e == nil {
		return nil
	}
	f := field(i, key)
	switch {
	case isNull(e.val) && key == "include":
		c.add(e.key.Line, f, `has no globs; list the globs the root serves, such as ["**"]`)
		return nil
	case isNull(e.val):
		return nil
	case e.val.Kind == scalarKind:
		c.add(e.val.Line, f, "must be a list of globs; write %s: [%q]", key, e.val.Value)
		return nil
	case e.val.Kind != seqKind:
		c.add(e.val.Line, f, `must be a list of globs, such as ["docs/**"], not %s`, kindName(e.val))
		return nil
	case len(e.val.Content) == 0 && key == "include":
		c.add(e.val.Line, f, `is empty; list the globs the root serves, such as ["**"]`)
	}
	var out []string
	for j, g := range e.val.Content {
		g = resolve(g)
		gf := fmt.Sprintf("%s[%d]", f, j)
		switch {
		case g.Kind != scalarKind || isNull(g):
			c.add(g.Line, gf, "must be a glob, such as \"docs/**\", not %s", kindName(g))
			continue
		case strings.TrimSpace(g.Value) == "":
			c.add(g.Line, gf, "empty glob; give a pattern such as \"docs/**\", or remove it")
			continue
		}
		if _, err := glob.Compile(g.Value, false); err != nil {
			c.add(g.Line, gf, "%q: %s; a glob is relative to the root folder, such as \"docs/**\" or \"*.md\"", g.Value, err)
			continue
		}
		out = append(out, g.Value)
	}
	return out
}

// reachesTop reports whether some include glob can select a file directly
// in the root, as the worker decides it.
func reachesTop(include []string) bool {
	for _, p := range include {
		if g, err := glob.Compile(p, false); err == nil && g.MatchesSomeTopLevelName() {
			return true
		}
	}
	return false
}

// boolean reads true or false, quoted or not; yes/no and on/off are
// YAML's older spellings of the same.
func (c *checker) boolean(e *entry, f string) bool {
	s, ok := c.scalar(e, f, "true or false")
	if !ok {
		return true
	}
	switch strings.ToLower(s) {
	case "true", "yes", "on":
		return true
	case "false", "no", "off":
		return false
	}
	c.add(e.val.Line, f, "%s is not true or false", quoteIfNeeded(s))
	return true
}

// tools checks a root's tool mask: read, write or all, or a list of tool
// names (as a YAML list or one comma-separated value).
func (c *checker) tools(i int, e *entry) toolset.Mask {
	if e == nil {
		return nil
	}
	f := field(i, "tools")
	const want = "read, write, all or a list of tool names"
	if isNull(e.val) || (e.val.Kind == scalarKind && strings.TrimSpace(e.val.Value) == "") {
		c.add(e.key.Line, f, "has no value; use %s", want)
		return nil
	}
	switch e.val.Kind {
	case scalarKind:
		m, err := toolset.Parse(e.val.Value)
		if err == nil && len(m) < len(strings.Split(e.val.Value, ",")) {
			err = fmt.Errorf("%q lists a tool twice; list each tool once", e.val.Value)
		}
		if err != nil {
			c.add(e.val.Line, f, "%s", err)
			return nil
		}
		return m
	case seqKind:
	default:
		c.add(e.val.Line, f, "must be %s, not %s", want, kindName(e.val))
		return nil
	}
	var list []string
	bad := false
	for j, t := range e.val.Content {
		t = resolve(t)
		tf := fmt.Sprintf("%s[%d]", f, j)
		if t.Kind != scalarKind || isNull(t) {
			c.add(t.Line, tf, "must be a tool name, not %s", kindName(t))
			bad = true
			continue
		}
		if _, err := toolset.FromList([]string{t.Value}); err != nil {
			c.add(t.Line, tf, "%s", err)
			bad = true
			continue
		}
		if slices.Contains(list, t.Value) {
			c.add(t.Line, tf, "%s is listed twice; list each tool once", t.Value)
			bad = true
			continue
		}
		list = append(list, t.Value)
	}
	if bad {
		return nil
	}
	m, err := toolset.FromList(list)
	if err != nil {
		c.add(e.val.Line, f, "%s", err)
	}
	return m
}

// limits checks a root's limits against internal/limits.Table.
func (c *checker) limits(i int, e *entry) map[string]int64 {
	out := map[string]int64{}
	f := field(i, "limits")
	switch {
	case isNull(e.val):
		return out
	case e.val.Kind != mapKind:
		c.add(e.val.Line, f, "must be a mapping of limits to whole numbers, such as {max_read_bytes: 65536}, not %s", kindName(e.val))
		return out
	}
	for _, le := range c.mapping(e.val, f+".", limits.Keys(), "limit").order {
		l, _ := limits.Lookup(le.key.Value)
		if v, ok := c.limit(l, le, f+"."+l.Key); ok {
			out[l.Key] = v
		}
	}
	return out
}

var wholeNumber = regexp.MustCompile(`^[+-]?[0-9]+$`)

// limit checks one limit's value, written quoted or not.
func (c *checker) limit(l limits.Limit, e *entry, f string) (int64, bool) {
	takes := "use " + l.Range()
	s, ok := c.scalar(e, f, "a whole number; "+takes)
	if !ok {
		return 0, false
	}
	if !wholeNumber.MatchString(s) {
		c.add(e.val.Line, f, "%s is not a whole number; %s", quoteIfNeeded(s), takes)
		return 0, false
	}
	v, err := strconv.ParseInt(strings.TrimPrefix(s, "+"), 10, 64)
	switch {
	case err != nil && strings.HasPrefix(s, "-"), err == nil && v < l.Min:
		c.add(e.val.Line, f, "%s is too small; %s", s, takes)
		return 0, false
	case err != nil, v > l.Max:
		c.add(e.val.Line, f, "%s is too large; use %d to %d", s, l.Min, l.Max)
		return 0, false
	}
	return v, true
}

// keyEnv checks the name of a root's cursor-key variable.
func (c *checker) keyEnv(i int, e *entry) string {
	f := field(i, "cursor_key_env")
	want := "the name of the environment variable holding the root's cursor key, such as FSMCP_READER_KEY"
	s, ok := c.scalar(e, f, want)
	switch {
	case !ok:
		return ""
	case !names.Env(s):
		c.add(e.val.Line, f, "%s is not an environment variable name; give %s", quoteIfNeeded(s), want)
		return ""
	}
	return s
}

// keyProblem says what is wrong with the cursor key in variable name, or
// "". It never shows the value.
func keyProblem(name string, lookup func(string) (string, bool)) string {
	how := fmt.Sprintf("a cursor key is %s, made with: %s", cursorkey.Format, cursorkey.Command)
	v, ok := lookup(name)
	if !ok {
		return fmt.Sprintf("environment variable %s is not set; %s", name, how)
	}
	if _, err := cursorkey.Decode(v); err != nil {
		return fmt.Sprintf("environment variable %s is not a cursor key: its value %s; %s", name, err, how)
	}
	return ""
}

// callTimeout checks a root's call_timeout.
func (c *checker) callTimeout(i int, e *entry) time.Duration {
	f := field(i, "call_timeout")
	want := "a duration from " + limits.CallTimeoutRange() + ", such as 30s or 2m"
	s, ok := c.scalar(e, f, want)
	if !ok {
		return limits.DefaultCallTimeout
	}
	if wholeNumber.MatchString(s) {
		c.add(e.val.Line, f, "%s has no unit; give %s", s, want)
		return limits.DefaultCallTimeout
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		c.add(e.val.Line, f, "%q is not a duration; give %s", s, want)
	case d < limits.MinCallTimeout || d > limits.MaxCallTimeout:
		c.add(e.val.Line, f, "%q is out of range; give %s", s, want)
	default:
		return d
	}
	return limits.DefaultCallTimeout
}

// argSize checks that the worker's command line for r fits what execve
// takes on this system.
func (c *checker) argSize(i int, item *node, r Root) {
	f := fmt.Sprintf("roots[%d]", i)
	if size, limit := argBytes(r.Args()), argLimit(); size > limit {
		c.add(item.Line, f, "the worker's command line would take %d bytes, above this system's limit of %d (ARG_MAX, with %d kept for its environment); use fewer or shorter globs", size, limit, envReserve)
	} else if long := longestArg(r.Args()); long > maxArgStrlen {
		c.add(item.Line, f, "one worker argument would be %d bytes, above the kernel's limit of %d for a single argument; shorten it", long, maxArgStrlen)
	}
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
