//go:build linux

// Command floorsearch is the simplest MCP server that does search_text's
// paged job: the floor against which BenchmarkSearchFloor judges the
// worker's whole-tree search.
//
//	floorsearch [-no-scan] ROOT
//
// It lists ROOT's regular files once, sorted, at start, and serves one
// tool, search_text {query, cursor}, through the go-sdk server on stdio,
// taking and giving raw JSON as the worker does (no schema checks). A
// page takes the files from the cursor on until their sizes reach the
// worker's default scan budget (4 MiB), reads them on every core at once
// and finds the literal query in each; the answer is the matches (path,
// line, text) and the index of the next file as next_cursor. It keeps
// none of the worker's rules (no confinement, includes, limits, cursor
// checks or change detection) and nothing made for speed (no scanning
// ahead, no next page begun before it is asked for), so its time is what
// the job costs the protocol, the go-sdk and the disk cache alone.
//
// With -no-scan it pages the same files by their sizes without reading
// them: the cost of the calls alone.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pageBudget is the worker's default --max-scan-bytes.
const pageBudget = 4 << 20

type file struct {
	rel  string
	size int64
}

type args struct {
	Query  string `json:"query"`
	Cursor string `json:"cursor,omitempty"`
}

type match struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

type page struct {
	Items      []match `json:"items"`
	NextCursor string  `json:"next_cursor,omitempty"`
}

func main() {
	noScan := flag.Bool("no-scan", false, "page by file sizes without reading the files")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: floorsearch [-no-scan] ROOT")
		os.Exit(64)
	}
	root := flag.Arg(0)
	files, err := list(root)
	if err != nil {
		fmt.Fprintf(os.Stderr, "floorsearch: %v\n", err)
		os.Exit(1)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "floorsearch", Version: "1"}, nil)
	tool := &mcp.Tool{Name: "search_text", InputSchema: json.RawMessage(`{"type":"object"}`)}
	s.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a args
		if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
			return nil, err
		}
		from, err := strconv.Atoi("0" + a.Cursor)
		if err != nil || from >= len(files) {
			return nil, fmt.Errorf("bad cursor %q", a.Cursor)
		}
		to := from + 1
		for sum := files[from].size; to < len(files) && sum+files[to].size <= pageBudget; to++ {
			sum += files[to].size
		}
		p := page{Items: []match{}}
		if !*noScan {
			p.Items = scan(root, files[from:to], []byte(a.Query))
		}
		if to < len(files) {
			p.NextCursor = strconv.Itoa(to)
		}
		out, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: string(out)}},
			StructuredContent: json.RawMessage(out),
		}, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintf(os.Stderr, "floorsearch: %v\n", err)
		os.Exit(1)
	}
}

// list is root's regular files in lexical order of their paths.
func list(root string) ([]file, error) {
	var files []file
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		files = append(files, file{filepath.ToSlash(rel), info.Size()})
		return nil
	})
	if len(files) == 0 && err == nil {
		err = fmt.Errorf("%s holds no files", root)
	}
	return files, err
}

// scan reads files on every core and returns the lines holding query, in
// the files' order.
func scan(root string, files []file, query []byte) []match {
	found := make([][]match, len(files))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(files); i = int(next.Add(1) - 1) {
				data, err := os.ReadFile(filepath.Join(root, files[i].rel))
				if err == nil {
					found[i] = find(files[i].rel, data, query)
				}
			}
		})
	}
	wg.Wait()
	var all []match
	for _, m := range found {
		all = append(all, m...)
	}
	if all == nil {
		all = []match{}
	}
	return all
}

// find is the lines of data holding query.
func find(rel string, data, query []byte) []match {
	var out []match
	line, counted := 1, 0
	for at := 0; ; {
		k := bytes.Index(data[at:], query)
		if k < 0 {
			return out
		}
		k += at
		line += bytes.Count(data[counted:k], []byte{'\n'})
		counted = k
		start := bytes.LastIndexByte(data[:k], '\n') + 1
		end := bytes.IndexByte(data[k:], '\n')
		if end < 0 {
			end = len(data) - k
		}
		out = append(out, match{rel, line, string(data[start : k+end])})
		at = k + end
	}
}
