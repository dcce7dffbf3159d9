package profile

import (
	"fmt"
	"slices"
	"strings"
)

// Legacy are the 2025 revisions of the initialize handshake a server of the
// profile can serve beside Version, newest first: the revisions most hosts'
// SDKs speak. The worker serves Version alone (docs/reference.md, Protocol
// answers); the supervisor's front serves these too, so those hosts can
// connect.
var Legacy = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// Revisions are every revision a server of the profile can serve, newest
// first.
var Revisions = append([]string{Version}, Legacy...)

// WorkerHint is what the refusal of an initialize tells a host when no
// legacy revision is served, unless Config.Hint says otherwise.
const WorkerHint = "a host that begins with initialize connects through fsmcp-supervisor, which serves 2025-11-25, 2025-06-18 and 2025-03-26 too"

// Config is what a server of the profile serves.
type Config struct {
	// Instructions is what server/discover and initialize tell a client
	// ("": Instructions).
	Instructions string
	// Versions are the revisions served, from Revisions, newest first
	// (nil: Version alone).
	Versions []string
	// Hint ends the refusal of an initialize when Versions has no legacy
	// revision ("": WorkerHint).
	Hint string
}

func (c Config) versions() []string {
	if len(c.Versions) == 0 {
		return []string{Version}
	}
	return c.Versions
}

// legacy reports whether c serves a revision of the initialize handshake.
func (c Config) legacy() bool {
	return slices.ContainsFunc(c.versions(), func(v string) bool { return slices.Contains(Legacy, v) })
}

func (c Config) hint() string {
	if c.Hint == "" {
		return WorkerHint
	}
	return c.Hint
}

// CheckVersions returns an error naming the first of versions that is not
// a revision of Revisions, or a repeated one, or none at all.
func CheckVersions(versions []string) error {
	if len(versions) == 0 {
		return fmt.Errorf("no protocol revision listed; list some of %s", strings.Join(Revisions, ", "))
	}
	for i, v := range versions {
		switch {
		case !slices.Contains(Revisions, v):
			return fmt.Errorf("%q is not a protocol revision fsmcp serves; use %s", v, strings.Join(Revisions, ", "))
		case slices.Contains(versions[:i], v):
			return fmt.Errorf("%q is listed twice", v)
		}
	}
	return nil
}

// Newest orders versions newest first, as Revisions does.
func Newest(versions []string) []string {
	out := slices.Clone(versions)
	slices.SortFunc(out, func(a, b string) int { return strings.Compare(b, a) })
	return out
}
