package worker_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsmcp/fsmcp/worker"
)

// A root is opened from a Config: the directory, what it serves, and the
// tools it offers. A configuration that cannot work is a *ConfigError
// whose text is one line for the operator.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "fsmcp-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	root, err := worker.Open(worker.Config{Root: dir, Include: []string{"docs/**"}, Name: "docs"})
	if err != nil {
		log.Fatal(err)
	}
	defer root.Close()
	for _, w := range root.Warnings() {
		fmt.Println("warning:", w)
	}

	_, err = worker.Open(worker.Config{Root: filepath.Join(dir, "missing"), Include: []string{"**"}})
	fmt.Println("error:", err)
	// Output:
	// warning: no --include pattern matches a file in the root itself, so write_text_file will refuse every call.
	// error: root does not exist
}

// NewServer builds the MCP server of an opened root and Serve serves it
// on any go-sdk transport: here an in-memory pair, with the go-sdk client
// on the other end. cmd/fsmcp-worker serves it on stdin and stdout.
func ExampleServe() {
	dir, err := os.MkdirTemp("", "fsmcp-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("# Notes\nfsmcp serves this line.\n"), 0o644); err != nil {
		log.Fatal(err)
	}

	root, err := worker.Open(worker.Config{Root: dir, Include: []string{"*.md"}, Tools: []string{"list_directory", "search_files", "search_text", "read_text_file"}})
	if err != nil {
		log.Fatal(err)
	}
	defer root.Close()
	srv := worker.NewServer(root, &worker.ServerOptions{Implementation: &mcp.Implementation{Name: "example", Version: "1"}})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clientSide, serverSide := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- worker.Serve(ctx, srv, serverSide) }()

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "example-client", Version: "1"}, nil).Connect(ctx, clientSide, nil)
	if err != nil {
		log.Fatal(err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range tools.Tools {
		fmt.Println("tool:", t.Name)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_text", Arguments: map[string]any{"query": "serves"}})
	if err != nil {
		log.Fatal(err)
	}
	page := res.StructuredContent.(map[string]any)
	for _, it := range page["items"].([]any) {
		m := it.(map[string]any)
		fmt.Printf("%s:%v: %s\n", m["path"], m["line"], m["text"])
	}
	cs.Close()
	<-served
	// Output:
	// tool: list_directory
	// tool: read_text_file
	// tool: search_files
	// tool: search_text
	// notes.md:2: fsmcp serves this line.
}
