// Command testworker is a small stand-in for fsmcp-worker used by the
// supervisor's own tests: a real plugin process that registers the tools of
// its --tools mask, reads and writes real files under --root, and holds a
// read_text_file call on a path named "slow-DURATION" (for example
// "slow-1s"; --slow when the duration does not parse) until cancelled (to
// exercise cancellation and the shutdown grace period).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsmcp/fsmcp/internal/profile"
	"github.com/fsmcp/fsmcp/internal/toolset"
	"github.com/fsmcp/fsmcp/internal/wire"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

type readArgs struct {
	Path string `json:"path"`
}

type item struct {
	ByteOffset int    `json:"byte_offset"`
	Text       string `json:"text"`
}

type readOut struct {
	Items       []item `json:"items"`
	NextCursor  string `json:"next_cursor"`
	ContentHash string `json:"content_hash"`
}

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

type writeOut struct {
	Path  string `json:"path"`
	Bytes int    `json:"bytes"`
}

func main() {
	fl := flag.NewFlagSet("testworker", flag.ContinueOnError)
	root := fl.String("root", "", "")
	tools := fl.String("tools", "all", "")
	name := fl.String("name", "", "")
	slow := fl.Duration("slow", 30*time.Second, "")
	// The real worker's other options are accepted and ignored.
	var ignored multi
	fl.Var(&ignored, "include", "")
	fl.Var(&ignored, "exclude", "")
	fl.Bool("no-default-exclude", false, "")
	fl.String("cursor-key-env", "", "")
	for _, n := range []string{"files", "directories", "depth", "entries", "scan-bytes", "file-bytes", "read-bytes", "result-bytes", "write-bytes", "cursor-hash-bytes"} {
		fl.Int64("max-"+n, 0, "")
	}
	if err := fl.Parse(os.Args[1:]); err != nil || *root == "" {
		fmt.Fprintln(os.Stderr, "testworker: bad flags")
		os.Exit(64)
	}
	mask, err := toolset.Parse(*tools)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testworker:", err)
		os.Exit(64)
	}
	srv := profile.NewServer(&mcp.Implementation{Name: "testworker", Version: "1"}, "")
	if mask.Has(toolset.ReadTextFile) {
		mcp.AddTool(srv.MCP, &mcp.Tool{Name: toolset.ReadTextFile, Description: "Read a file.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(ctx context.Context, _ *mcp.CallToolRequest, a readArgs) (*mcp.CallToolResult, readOut, error) {
				if d, ok := strings.CutPrefix(a.Path, "slow-"); ok {
					hold, err := time.ParseDuration(d)
					if err != nil {
						hold = *slow
					}
					select {
					case <-time.After(hold):
					case <-ctx.Done():
						fmt.Fprintln(os.Stderr, "testworker: slow call cancelled")
						return nil, readOut{}, ctx.Err()
					}
				}
				b, err := os.ReadFile(filepath.Join(*root, filepath.Base(a.Path)))
				if strings.HasPrefix(a.Path, "slow-") {
					b, err = nil, nil
				}
				if err != nil {
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such file: " + a.Path}}}, readOut{}, nil
				}
				if strings.HasPrefix(a.Path, "slow-") {
					b = []byte("slept")
				}
				return nil, readOut{Items: []item{{0, string(b)}}, ContentHash: "h"}, nil
			})
	}
	if mask.Has(toolset.WriteTextFile) {
		mcp.AddTool(srv.MCP, &mcp.Tool{Name: toolset.WriteTextFile, Description: "Write a file."},
			func(_ context.Context, _ *mcp.CallToolRequest, a writeArgs) (*mcp.CallToolResult, writeOut, error) {
				if err := os.WriteFile(filepath.Join(*root, filepath.Base(a.Path)), []byte(a.Content), 0o644); err != nil {
					return nil, writeOut{}, err
				}
				return nil, writeOut{Path: a.Path, Bytes: len(a.Content)}, nil
			})
	}
	fmt.Fprintf(os.Stderr, "testworker %s: serving %s\n", *name, mask)
	if !wire.Launched() {
		fmt.Fprintln(os.Stderr, "testworker: only runs under the supervisor")
		os.Exit(1)
	}
	if err := wire.Serve(srv, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "testworker:", err)
		os.Exit(1)
	}
}
