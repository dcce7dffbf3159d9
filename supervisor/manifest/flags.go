package manifest

import (
	"regexp"
	"strings"
)

// RootFlags are one root given on the command line instead of a manifest
// file, by the worker's own options: --root, --name, --include, --exclude,
// --no-default-exclude, --tools, the --max-* limits and --cursor-key-env,
// with the manifest's --call-timeout. Values are as typed; FromFlags
// checks them as Parse checks a manifest's root.
type RootFlags struct {
	Root             string
	Name             string // "": DefaultRootName
	Include, Exclude []string
	NoDefaultExclude bool
	Tools            string // "": all, as the worker's default
	// Limits holds each --max-* option given, by its manifest key
	// (max_read_bytes), as typed.
	Limits       map[string]string
	LimitOrder   []string // the keys of Limits in the order given
	CursorKeyEnv string
	CallTimeout  string
}

// DefaultRootName is the name of a root given on the command line without
// --name: the worker's own default, so its tools are root_<tool>.
const DefaultRootName = "root"

// FromFlags is the manifest of the one root f describes, relative paths
// resolved against dir, checked as a manifest file's root is: f becomes
// the YAML entry a manifest would hold. Its errors (Errors), and those of
// its CheckEnv, name the option instead of a file, line and field; its
// File is "".
func FromFlags(dir string, f RootFlags) (*Manifest, error) {
	if f.Root == "" {
		return nil, Errors{{Field: "--root", Msg: "missing; name the folder to serve"}}
	}
	str := func(s string) *node { return &node{Kind: scalarKind, Tag: "!!str", Value: s} }
	list := func(ss []string) *node {
		n := &node{Kind: seqKind}
		for _, s := range ss {
			n.Content = append(n.Content, str(s))
		}
		return n
	}
	item := &node{Kind: mapKind}
	set := func(key string, v *node) { item.Content = append(item.Content, str(key), v) }
	set("name", str(orDefault(f.Name, DefaultRootName)))
	set("path", str(f.Root))
	if len(f.Include) > 0 {
		set("include", list(f.Include))
	}
	if len(f.Exclude) > 0 {
		set("exclude", list(f.Exclude))
	}
	if f.NoDefaultExclude {
		set("default_exclude", str("false"))
	}
	set("tools", str(orDefault(f.Tools, "all")))
	if len(f.LimitOrder) > 0 {
		lim := &node{Kind: mapKind}
		for _, k := range f.LimitOrder {
			lim.Content = append(lim.Content, str(k), str(f.Limits[k]))
		}
		set("limits", lim)
	}
	if f.CursorKeyEnv != "" {
		set("cursor_key_env", str(f.CursorKeyEnv))
	}
	if f.CallTimeout != "" {
		set("call_timeout", str(f.CallTimeout))
	}
	c := &checker{flags: true}
	r, ok := c.root(dir, 0, item)
	if !ok {
		for _, e := range c.errs {
			e.Field, e.Line = optionOf(e.Field), 0
		}
		return nil, c.errs
	}
	return &Manifest{Roots: []Root{r.Root}}, nil
}

// orDefault is s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

var index = regexp.MustCompile(`\[\d+\]$`)

// optionOf is the command-line option of the manifest field of the first
// root: roots[0].path is --root, roots[0].include[2] is --include,
// roots[0].limits.max_read_bytes is --max-read-bytes.
func optionOf(field string) string {
	key, ok := strings.CutPrefix(field, "roots[0].")
	key = index.ReplaceAllString(key, "")
	switch {
	case !ok:
		return "--root" // the whole entry: the worker's command line
	case key == "path":
		return "--root"
	case key == "default_exclude":
		return "--no-default-exclude"
	}
	key = strings.TrimPrefix(key, "limits.")
	return "--" + strings.ReplaceAll(key, "_", "-")
}
