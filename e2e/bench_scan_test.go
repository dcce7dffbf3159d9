//go:build linux

package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkSearchTextAdversarial: the issue-15 inputs through the built
// worker, one 4 MiB page (the default --max-scan-bytes) each: a folded
// 256-byte term of '0's over lines of 255 '0's, and 16 crafted 256-byte
// terms (folded or not) over "abab..." lines. The reference, alternating
// with it in the same loop, is the case-sensitive search for the first
// term alone over the same file; x-one-term is the ratio (the issue's
// target is at most 3). MB/s is of the page.
func BenchmarkSearchTextAdversarial(b *testing.B) {
	for _, tc := range adversarialSearches {
		b.Run(tc.name, func(b *testing.B) {
			page := tc.page(4 << 20)
			root := b.TempDir()
			if err := os.WriteFile(filepath.Join(root, "page.txt"), page, 0o644); err != nil {
				b.Fatal(err)
			}
			cs := worker(b, root, "--include", "**")
			run := func(args map[string]any) {
				if hits, _ := benchFollow(b, cs, "search_text", args); len(hits) != 0 {
					b.Fatalf("%d hits, want none", len(hits))
				}
			}
			args, ref := tc.args(), tc.ref()
			run(args)
			run(ref)
			b.SetBytes(int64(len(page)))
			var c benchClock
			b.ResetTimer()
			for range b.N {
				c.measure(func() { run(args) })
				c.reference(b, "one-term", func() { run(ref) })
			}
			c.report(b)
		})
	}
}

// BenchmarkSearchTextTerms: BenchmarkSearchText's whole-tree search on the
// scaling trees with a folded query and with four any_of terms (the
// needle and three absent literals), following cursors to the end. The
// references are rg -F -i and rg -F with four -e patterns on the same
// tree. Ordinary text: the scanner stays on its anchors.
func BenchmarkSearchTextTerms(b *testing.B) {
	absent := []string{"zzNotThere_17", "Qq_absent_Literal", "never.seen.here"}
	for _, v := range []struct {
		name string
		args map[string]any
		rg   []string
	}{
		{"folded", map[string]any{"query": strings.ToUpper(benchNeedle), "case_insensitive": true}, []string{"-i", "-e", strings.ToUpper(benchNeedle)}},
		{"any_of4", map[string]any{"any_of": []any{benchNeedle, absent[0], absent[1], absent[2]}},
			[]string{"-e", benchNeedle, "-e", absent[0], "-e", absent[1], "-e", absent[2]}},
	} {
		b.Run(v.name, func(b *testing.B) {
			benchEachScale(b, func(b *testing.B, t *benchTreeInfo) {
				cs := benchStdio.open(b, t.root, benchTreeLimits())
				search := func() {
					if hits, _ := benchFollow(b, cs, "search_text", v.args); len(hits) != benchNeedleFiles {
						b.Fatalf("search_text found %d matches, want %d", len(hits), benchNeedleFiles)
					}
				}
				search()
				rg := benchTool(b, "rg")
				rgRun := func() {
					args := append(append([]string{"-F", "--no-config", "-c"}, v.rg...), t.root)
					if n := len(bytes.Split(bytes.TrimSpace(benchLines(b, rg, args...)), []byte("\n"))); n != benchNeedleFiles {
						b.Fatalf("rg matched %d files, want %d", n, benchNeedleFiles)
					}
				}
				b.SetBytes(t.bytes)
				var c benchClock
				b.ResetTimer()
				for range b.N {
					c.measure(search)
					if rg != "" {
						c.reference(b, "rg", rgRun)
					}
				}
				c.report(b)
			})
		})
	}
}
