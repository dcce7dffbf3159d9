package limits

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// readDoc reads a file of the repository.
func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../../" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tableRows are the lines of doc that start a Markdown table row with
// prefix.
func tableRows(doc, prefix string) []string {
	var rows []string
	for line := range strings.SplitSeq(doc, "\n") {
		if strings.HasPrefix(line, prefix) {
			rows = append(rows, line)
		}
	}
	return rows
}

// TestReadmeOptions: the README's options table has one row for each
// limit, with its default and (where it is not simply positive) its
// range, and no row for a limit the worker does not have.
func TestReadmeOptions(t *testing.T) {
	rows := tableRows(readDoc(t, "README.md"), "| `--max-")
	if len(rows) != len(Table) {
		t.Errorf("README lists %d --max-* options, the table %d", len(rows), len(Table))
	}
	for _, l := range Table {
		var row string
		for _, r := range rows {
			if strings.HasPrefix(r, "| `"+l.Flag()+" N` |") {
				row = r
			}
		}
		if row == "" {
			t.Errorf("README has no row for %s", l.Flag())
			continue
		}
		if !strings.HasSuffix(row, "| "+l.DefaultText()+" |") {
			t.Errorf("README row %q: default is not %s", row, l.DefaultText())
		}
		if (l.Min != 1 || l.Max != MaxInteger) && !strings.Contains(row, l.Range()) {
			t.Errorf("README row %q does not give the range %q", row, l.Range())
		}
	}
}

// TestReferenceLimits: docs/reference.md's Limits table is the table, row
// for row, and its call_timeout row gives the range and the default.
func TestReferenceLimits(t *testing.T) {
	doc := readDoc(t, "docs/reference.md")
	var want []string
	for _, l := range Table {
		want = append(want, fmt.Sprintf("| `%s` | `%s` | %s | %s |", l.Key, l.Flag(), l.Range(), l.DefaultText()))
	}
	got := tableRows(doc, "| `max_")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("reference Limits rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	ct := tableRows(doc, "| `roots[].call_timeout` |")
	rng := "`" + strings.Replace(CallTimeoutRange(), " to ", "` to `", 1) + "`"
	def := "Default `" + DefaultCallTimeout.String() + "`"
	if len(ct) != 1 || !strings.Contains(ct[0], rng) || !strings.Contains(ct[0], def) {
		t.Errorf("reference call_timeout rows %q, want one giving %s and %s", ct, rng, def)
	}
}
