package main

import (
	"flag"
	"strings"

	"github.com/fsmcp/fsmcp/internal/limits"
	"github.com/fsmcp/fsmcp/supervisor/manifest"
)

// repeated is a flag that may be given more than once.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

// rootOptions are the options of a root given on the command line, how
// many times --root was given (one root is served this way, so a second
// --root is refused once the options are parsed, in the words of the
// other usage errors), and a switch given a value, as the worker refuses
// it: "--no-default-exclude=false".
type rootOptions struct {
	manifest.RootFlags
	roots       int
	switchValue string
}

// oneRoot registers on fl the options of a root given on the command line
// rather than in a manifest: the worker's own (--root, --name, --include,
// --exclude, --no-default-exclude, --tools, every --max-* limit,
// --cursor-key-env) and the manifest's --call-timeout. It returns what
// they fill in once fl is parsed.
func oneRoot(fl *flag.FlagSet) *rootOptions {
	o := &rootOptions{RootFlags: manifest.RootFlags{Limits: map[string]string{}}}
	f := &o.RootFlags
	fl.Func("root", "", func(v string) error {
		f.Root = v
		o.roots++
		return nil
	})
	fl.StringVar(&f.Name, "name", "", "")
	fl.Var((*repeated)(&f.Include), "include", "")
	fl.Var((*repeated)(&f.Exclude), "exclude", "")
	fl.Var(switchFlag{&f.NoDefaultExclude, "--no-default-exclude", &o.switchValue}, "no-default-exclude", "")
	fl.StringVar(&f.Tools, "tools", "", "")
	fl.StringVar(&f.CursorKeyEnv, "cursor-key-env", "", "")
	fl.StringVar(&f.CallTimeout, "call-timeout", "", "")
	for _, l := range limits.Table {
		fl.Func(strings.TrimPrefix(l.Flag(), "--"), "", func(v string) error {
			if _, seen := f.Limits[l.Key]; !seen {
				f.LimitOrder = append(f.LimitOrder, l.Key)
			}
			f.Limits[l.Key] = v
			return nil
		})
	}
	return o
}

// rootOptionGiven reports whether fl was given an option of oneRoot other
// than --root.
func rootOptionGiven(fl *flag.FlagSet) bool {
	given := false
	fl.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "manifest", "worker", "grace", "log-level", "version", "root":
		default:
			given = true
		}
	})
	return given
}

// switchFlag is an option that takes no value, as the worker's switches
// are. The flag package hands it "true" when it is given alone (or as
// =true); any other value is recorded in given, as name=value, for the
// option to be refused as the worker refuses it rather than read as the
// switch left off.
type switchFlag struct {
	on    *bool
	name  string
	given *string
}

func (s switchFlag) IsBoolFlag() bool { return true }

func (s switchFlag) String() string { return "" }

func (s switchFlag) Set(v string) error {
	if v != "true" {
		*s.given = s.name + "=" + v
		return nil
	}
	*s.on = true
	return nil
}
