package e2e

import (
	"strings"
	"testing"
)

// BenchmarkSearchTextTermCost: what many terms and folding cost over the
// same bytes on ordinary text. The whole-tree rare-literal search_text of
// BenchmarkSearchText200MB on its 206 MB tree of 2,000 files (default
// budgets, the worker's inventory kept, so the pages are scans and round
// trips; under -short the 10k tree of 1 KiB files, where opening the files
// costs more than scanning them), in the same loop, alternating which goes
// first:
//
//	any_of16  any_of with the literal and 15 absent literals,  x-one-term
//	folded    the literal upper-cased with case_insensitive,   x-case-sensitive
//
// where the reference is the same worker searching for the literal alone,
// case-sensitively.
func BenchmarkSearchTextTermCost(b *testing.B) {
	// 15 identifiers the tree does not hold, of varied letters, so that
	// their rarest bytes differ as real queries' do.
	terms := []any{benchNeedle}
	for _, t := range []string{"unmarshalJSONValue", "QuotaExceeded", "mutex.Unlock", "http.StatusNotFound",
		"yamlDecoder", "zipArchive", "Vector3D", "kafkaTopic", "grpcServerOpts", "bcrypt.Compare",
		"xmlAttr", "jwtClaims", "Prometheus", "sqlTx.Commit", "WebSocketUpgrade"} {
		terms = append(terms, t)
	}
	t := func() *benchTreeInfo {
		if testing.Short() {
			return benchTree(b, 10000, benchScaleMean)
		}
		return benchTree(b, benchBigFiles, benchBigMean)
	}()
	for _, v := range []struct {
		name, ref string
		args      map[string]any
	}{
		{"any_of16", "one-term", map[string]any{"any_of": terms}},
		{"folded", "case-sensitive", map[string]any{"query": strings.ToUpper(benchNeedle), "case_insensitive": true}},
	} {
		b.Run(v.name, func(b *testing.B) {
			cs := benchStdio.open(b, t.root, benchTreeLimits())
			search := func(args map[string]any) func() {
				return func() {
					if hits, _ := benchFollow(b, cs, "search_text", args); len(hits) != benchNeedleFiles {
						b.Fatalf("search_text %v found %d matches, want %d", args, len(hits), benchNeedleFiles)
					}
				}
			}
			measured, reference := search(v.args), search(map[string]any{"query": benchNeedle})
			measured()
			reference()
			b.SetBytes(t.bytes)
			var c benchClock
			b.ResetTimer()
			for i := range b.N {
				if i%2 == 0 {
					c.reference(b, v.ref, reference)
				}
				c.measure(measured)
				if i%2 == 1 {
					c.reference(b, v.ref, reference)
				}
			}
			c.report(b)
		})
	}
}
