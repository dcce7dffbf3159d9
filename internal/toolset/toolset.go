// Package toolset names the worker's five tools and parses tool masks, the
// subsets of them a worker registers. The worker and the supervisor share it
// so a mask means the same thing on both sides of the process boundary.
package toolset

import (
	"fmt"
	"slices"
	"strings"
)

// The tool names, as registered by the worker.
const (
	ListDirectory = "list_directory"
	SearchFiles   = "search_files"
	SearchText    = "search_text"
	ReadTextFile  = "read_text_file"
	WriteTextFile = "write_text_file"
)

// All lists every tool in registration order.
var All = []string{ListDirectory, SearchFiles, SearchText, ReadTextFile, WriteTextFile}

// Read lists the tools that only read.
var Read = []string{ListDirectory, SearchFiles, SearchText, ReadTextFile}

// Write lists the tools that change the root.
var Write = []string{WriteTextFile}

// Mask is a set of tool names.
type Mask []string

// Has reports whether the mask holds the named tool.
func (m Mask) Has(name string) bool { return slices.Contains(m, name) }

// String renders the mask in the --tools flag form.
func (m Mask) String() string { return strings.Join(m, ",") }

// Parse reads a mask: "read", "write", "all", or a comma-separated list of
// tool names. The result is in the order of All, without duplicates.
func Parse(s string) (Mask, error) {
	switch strings.TrimSpace(s) {
	case "all":
		return Mask(slices.Clone(All)), nil
	case "read":
		return Mask(slices.Clone(Read)), nil
	case "write":
		return Mask(slices.Clone(Write)), nil
	}
	return FromList(strings.Split(s, ","))
}

// FromList builds a mask from tool names, refusing unknown or empty ones.
func FromList(names []string) (Mask, error) {
	seen := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		switch {
		case n == "":
			return nil, fmt.Errorf("empty tool name in mask; use read, write, all or names from %s", strings.Join(All, ", "))
		case n == "read" || n == "write" || n == "all":
			return nil, fmt.Errorf("%q is a mask, not a tool name; give read, write or all alone, or a list of names from %s", n, strings.Join(All, ", "))
		case !slices.Contains(All, n):
			return nil, fmt.Errorf("unknown tool %q; use read, write, all or names from %s", n, strings.Join(All, ", "))
		}
		seen[n] = true
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("the tool mask names no tool")
	}
	var m Mask
	for _, n := range All {
		if seen[n] {
			m = append(m, n)
		}
	}
	return m, nil
}
