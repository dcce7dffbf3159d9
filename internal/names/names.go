// Package names holds the patterns of the names an operator chooses: a
// root's name (in tool names, logs and cursor scopes) and the name of an
// environment variable that holds a cursor key. Both binaries, the
// manifest's JSON Schema (by a test) and the docs use these.
package names

import "regexp"

// RootPattern is what a root's name must match: it prefixes the root's
// tools (<root>_<tool>), so it starts with a letter and stays short.
const RootPattern = `[a-z][a-z0-9-]{0,31}`

// EnvPattern is what an environment variable's name must match: a POSIX
// shell name, so a host's configuration can set it.
const EnvPattern = `[A-Za-z_][A-Za-z0-9_]*`

var (
	root = regexp.MustCompile(`^` + RootPattern + `$`)
	env  = regexp.MustCompile(`^` + EnvPattern + `$`)
)

// Root reports whether s is a valid root name.
func Root(s string) bool { return root.MatchString(s) }

// Env reports whether s is a valid environment variable name.
func Env(s string) bool { return env.MatchString(s) }
