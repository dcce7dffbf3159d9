package manifest

import (
	"strings"

	"go.yaml.in/yaml/v3"
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
// resolved against dir, checked as a manifest file's root is. Its errors
// (Errors), and those of its CheckEnv, name the option instead of a file,
// line and field; its File is "".
func FromFlags(dir string, f RootFlags) (*Manifest, error) {
	rd := rootDoc{
		Name: f.Name, Path: f.Root, Include: f.Include, Exclude: f.Exclude,
		Tools:        yaml.Node{Kind: yaml.ScalarNode, Value: f.Tools},
		CursorKeyEnv: f.CursorKeyEnv, CallTimeout: f.CallTimeout,
	}
	if rd.Name == "" {
		rd.Name = DefaultRootName
	}
	if rd.Tools.Value == "" {
		rd.Tools.Value = "all"
	}
	if f.NoDefaultExclude {
		off := false
		rd.DefaultExclude = &off
	}
	if len(f.LimitOrder) > 0 {
		rd.Limits = yaml.Node{Kind: yaml.MappingNode}
		for _, k := range f.LimitOrder {
			rd.Limits.Content = append(rd.Limits.Content,
				&yaml.Node{Kind: yaml.ScalarNode, Value: k}, &yaml.Node{Kind: yaml.ScalarNode, Value: f.Limits[k]})
		}
	}
	if f.Root == "" {
		return nil, Errors{{Field: "--root", Msg: "missing; name the folder to serve"}}
	}
	r, errs := checkRoot("", dir, 0, rd, nil)
	if len(errs) > 0 {
		for _, e := range errs {
			e.Field, e.Line = optionOf(e.Field), 0
		}
		return nil, errs
	}
	return &Manifest{Roots: []Root{r}}, nil
}

// optionOf is the command-line option of the manifest field of the first
// root: roots[0].path is --root, roots[0].limits.max_read_bytes is
// --max-read-bytes.
func optionOf(field string) string {
	key, ok := strings.CutPrefix(field, "roots[0].")
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
