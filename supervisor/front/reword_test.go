package front

import (
	"encoding/json"
	"testing"

	"github.com/fsmcp/fsmcp/internal/limits"
)

// limitedRoot is a root with limits: the defaults, 5 files at most.
type limitedRoot struct{ root }

func (r *limitedRoot) Limits() limits.Limits {
	l := limits.Default
	l.MaxFiles = 5
	return l
}

// TestReword: exactly the worker texts of docs/reference.md, Errors, are
// put in the manifest's words, with the root's limits; any other text, and
// the limits of a root that does not give them, pass unchanged.
func TestReword(t *testing.T) {
	lr := &limitedRoot{root{name: "reader"}}
	tests := []struct {
		r          Root
		tool, text string
		want       string // "": unchanged
	}{
		{lr, "read_text_file", "path matches an --exclude pattern of this root",
			"path matches an exclude pattern of root reader (the manifest's exclude: list, or the built-in list unless default_exclude: false)"},
		{lr, "write_text_file", "path matches no --include pattern of this root", "path matches no include: pattern of root reader"},
		{lr, "write_text_file", "no --include pattern of this root matches a file in the root itself, so no write can be accepted; a write names one basename and lands in the root, so add an --include pattern without a directory prefix, such as '**'",
			`no include: pattern of root reader matches a file in the root itself, so no write can be accepted; a write names one basename and lands in the root, so add an include: pattern without a directory prefix, such as "**", to the manifest`},
		{lr, "list_directory", "file limit exceeded",
			"file limit exceeded: the walk of root reader selects more than 5 files (limits.max_files: 5); narrow the call to a smaller folder with its path argument, or raise limits.max_files in the manifest"},
		{lr, "search_files", "directory limit exceeded",
			"directory limit exceeded: the walk of root reader enters more than 50000 directories (limits.max_directories: 50000); narrow the call to a smaller folder with its path argument, or raise limits.max_directories in the manifest"},
		{lr, "search_text", "directory depth limit exceeded",
			"directory depth limit exceeded: the walk of root reader goes deeper than 64 directory levels (limits.max_depth: 64); narrow the call to a smaller folder with its path argument, or raise limits.max_depth in the manifest"},
		{lr, "list_directory", "directory entry limit exceeded",
			"directory entry limit exceeded: the walk of root reader reads more than 1000000 directory entries (limits.max_entries: 1000000); narrow the call to a smaller folder with its path argument, or raise limits.max_entries in the manifest"},
		{lr, "read_text_file", "file exceeds the configured size limit", "file exceeds the size limit of root reader (limits.max_file_bytes: 0)"},
		{lr, "read_text_file", "deterministic cursor hashing exceeds the configured byte ceiling",
			"deterministic cursor hashing exceeds the byte ceiling of root reader (limits.max_cursor_hash_bytes: 16777216); narrow the call, or raise limits.max_cursor_hash_bytes in the manifest"},
		{lr, "write_text_file", "content exceeds the 65536-byte write limit", "content exceeds the 65536-byte write limit of root reader (limits.max_write_bytes)"},
		{lr, "read_text_file", "Input validation error: Invalid arguments for tool read_text_file: path must be a string",
			"Input validation error: Invalid arguments for tool reader_read_text_file: path must be a string"},
		// Unchanged: other texts, near misses, another tool's name.
		{lr, "read_text_file", "path is not served by this root", ""},
		{lr, "read_text_file", "file limit exceeded.", ""},
		{lr, "read_text_file", "Input validation error: Invalid arguments for tool search_text: limit", ""},
		{lr, "write_text_file", "content exceeds the -1-byte write limit", ""},
		{&root{name: "plain"}, "list_directory", "file limit exceeded", ""},
	}
	for _, tc := range tests {
		got, ok := reword(tc.r, tc.tool, tc.text)
		if tc.want == "" {
			if ok {
				t.Errorf("%q reworded to %q, want it unchanged", tc.text, got)
			}
			continue
		}
		if !ok || got != tc.want {
			t.Errorf("%q\n got %q (%v)\nwant %q", tc.text, got, ok, tc.want)
		}
	}
}

// TestRewordResult: a worker's error result gets the new text with every
// other member as it came, in its order; a result that is no error, or
// whose text is not one to reword, is returned as the same bytes.
func TestRewordResult(t *testing.T) {
	lr := &limitedRoot{root{name: "reader"}}
	const head = `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"fsmcp-worker","version":"0"}},"content":[{"type":"text","text":`
	const tail = `}],"isError":true,"resultType":"complete"}`
	in := json.RawMessage(head + `"file limit exceeded"` + tail)
	got := rewordResult(lr, "list_directory", in)
	want := `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"fsmcp-worker","version":"0"}},"content":[{"text":"file limit exceeded: the walk of root reader selects more than 5 files (limits.max_files: 5); narrow the call to a smaller folder with its path argument, or raise limits.max_files in the manifest","type":"text"}],"isError":true,"resultType":"complete"}`
	if string(got) != want {
		t.Errorf("reworded\n got %s\nwant %s", got, want)
	}
	for _, same := range []string{
		head + `"path is not served by this root"` + tail,
		`{"content":[{"type":"text","text":"file limit exceeded"}],"structuredContent":{"items":[]},"resultType":"complete"}`,
		`{"content":[{"type":"text","text":"a \"isError\":true inside a string"}],"resultType":"complete"}`,
	} {
		if got := rewordResult(lr, "list_directory", json.RawMessage(same)); string(got) != same {
			t.Errorf("changed %s\nto %s", same, got)
		}
	}
}
