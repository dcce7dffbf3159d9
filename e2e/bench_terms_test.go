//go:build linux

package e2e

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkSearchTextTermCost: what many terms and folding cost over the
// same bytes on ordinary text. The whole-tree rare-literal search_text of
// BenchmarkSearchText200MB on its 206 MB tree of 2,000 files (default
// budgets, the worker's inventory kept between a search's pages, so the
// pages after the first are scans and round trips; under -short the 10k
// tree of 1 KiB files, where opening the files costs more than scanning
// them), in the same loop, alternating which goes first:
//
//	any_of16       any_of with the literal and 15 absent literals,  x-one-term
//	folded         the literal upper-cased with case_insensitive,   x-case-sensitive
//	any_of16-avx2  any_of16 with the scanner's AVX-512 steps off    x-one-term
//
// where the reference is the same worker searching for the literal alone,
// case-sensitively. The last runs the worker with
// GODEBUG=cpu.avx512vbmi=off, so its prefilter takes the AVX2 steps that
// CPUs without AVX-512 run (the runtime warns on stderr that it does not
// know the option; golang.org/x/sys/cpu does).
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
		env       []string
	}{
		{"any_of16", "one-term", map[string]any{"any_of": terms}, nil},
		{"folded", "case-sensitive", map[string]any{"query": strings.ToUpper(benchNeedle), "case_insensitive": true}, nil},
		{"any_of16-avx2", "one-term", map[string]any{"any_of": terms}, []string{"GODEBUG=cpu.avx512vbmi=off"}},
	} {
		b.Run(v.name, func(b *testing.B) {
			var cs *mcp.ClientSession
			if v.env == nil {
				cs = benchStdio.open(b, t.root, benchTreeLimits())
			} else {
				cs = connect(b, v.env, workerBin, append([]string{"--root", t.root, "--include", "**"}, benchFlags(benchTreeLimits())...)...)
			}
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
				c.alternate(b, i, v.ref, reference, measured)
			}
			c.report(b)
		})
	}
}
