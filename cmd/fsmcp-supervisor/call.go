package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsmcp/fsmcp/internal/version"
	"github.com/fsmcp/fsmcp/supervisor"
	"github.com/fsmcp/fsmcp/supervisor/hostentry"
)

// maxPages bounds call --all: a traversal that keeps issuing cursors past
// this many pages is reported, not followed forever.
const maxPages = 100000

// session is a supervisor started on a manifest for one command, with a
// client connected to it.
type session struct {
	cs      *mcp.ClientSession
	cleanup func()
}

// startSession checks the manifest as startup would, then starts this
// binary as the supervisor on it, with this process's environment (so
// cursor keys are found), and connects to it over stdio.
func startSession(ctx context.Context, manifestFile, workerFlag string, stderr io.Writer) (*session, error) {
	if _, err := supervisor.Load(manifestFile, nil); err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("cannot tell where this binary is: %v", err)
	}
	s := &session{}
	bin, cleanup, err := sessionWorker(workerFlag, stderr)
	if err != nil {
		return nil, err
	}
	s.cleanup = cleanup
	cmd := exec.Command(self, "--manifest", manifestFile, "--worker", bin)
	cmd.Stderr = stderr
	s.cs, err = mcp.NewClient(&mcp.Implementation{Name: "fsmcp-supervisor-cli", Version: version.String()}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		s.cleanup()
		return nil, &startError{err}
	}
	return s, nil
}

// startError is a supervisor that was started and did not come up: not bad
// input, so it exits 1 rather than 64.
type startError struct{ err error }

func (e *startError) Error() string { return "starting the supervisor: " + e.err.Error() }

// sessionError prints err and returns its exit status.
func sessionError(stderr io.Writer, err error) int {
	var se *startError
	if errors.As(err, &se) {
		fmt.Fprintf(stderr, "fsmcp-supervisor: %v\n", err)
		return 1
	}
	return usageError(stderr, err)
}

func (s *session) close() {
	s.cs.Close()
	s.cleanup()
}

// listedSession starts a session (see startSession) and lists every tool
// the supervisor serves, in its order. When either fails it has said why
// on stderr and returns a nil session and the exit status.
func listedSession(ctx context.Context, manifestFile, workerFlag string, stderr io.Writer) (*session, []*mcp.Tool, int) {
	s, err := startSession(ctx, manifestFile, workerFlag, stderr)
	if err != nil {
		return nil, nil, sessionError(stderr, err)
	}
	var list []*mcp.Tool
	for t, err := range s.cs.Tools(ctx, nil) {
		if err != nil {
			s.close()
			fmt.Fprintf(stderr, "fsmcp-supervisor: tools/list: %v\n", err)
			return nil, nil, 1
		}
		list = append(list, t)
	}
	return s, list, 0
}

// interleaved parses flags that may come before, between or after the
// positional arguments, which it returns.
func interleaved(fl *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fl.Parse(args); err != nil {
			return nil, err
		}
		if fl.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fl.Arg(0))
		args = fl.Args()[1:]
	}
}

// manifestIn is the positional-argument check of a command that takes one
// manifest, as --manifest FILE (flagValue) or as its one argument, which
// it then stores in flagValue.
func manifestIn(flagValue *string) func(pos []string) bool {
	return func(pos []string) bool {
		switch {
		case *flagValue != "" && len(pos) == 0:
			return true
		case *flagValue == "" && len(pos) == 1:
			*flagValue = pos[0]
			return true
		}
		return false
	}
}

// tools prints the tools a host would see: one line each (name, effect,
// description), or with --json the tools/list entries as served.
func tools(args []string, stdout, stderr io.Writer) int {
	fl := newFlags()
	manifestFile := fl.String("manifest", "", "")
	workerBin := fl.String("worker", "", "")
	asJSON := fl.Bool("json", false, "")
	const short = "usage: fsmcp-supervisor tools [--manifest] FILE [--json] [--worker BIN]"
	if _, code, ok := parseCommand(fl, args, short, manifestIn(manifestFile), stdout, stderr); !ok {
		return code
	}
	ctx := context.Background()
	s, list, code := listedSession(ctx, *manifestFile, *workerBin, stderr)
	if s == nil {
		return code
	}
	defer s.close()
	if *asJSON {
		return printJSON(stdout, stderr, list, "  ")
	}
	for _, t := range list {
		_, tool, _ := strings.Cut(t.Name, "_")
		desc, _, _ := strings.Cut(t.Description, "\n")
		fmt.Fprintf(stdout, "%-28s %-5s %s\n", t.Name, hostentry.Effect(tool), desc)
	}
	return 0
}

// call makes one tool call through a supervisor started on the manifest and
// prints the result's value; with --all it follows next_cursor and prints
// each page on a line of its own.
func call(args []string, stdout, stderr io.Writer) int {
	fl := newFlags()
	manifestFile := fl.String("manifest", "", "")
	workerBin := fl.String("worker", "", "")
	all := fl.Bool("all", false, "")
	const short = "usage: fsmcp-supervisor call --manifest FILE TOOL [JSON-ARGUMENTS] [--all] [--worker BIN]"
	pos, code, ok := parseCommand(fl, args, short, func(pos []string) bool {
		return *manifestFile != "" && len(pos) >= 1 && len(pos) <= 2
	}, stdout, stderr)
	if !ok {
		return code
	}
	tool, arguments := pos[0], map[string]any{}
	if len(pos) == 2 {
		dec := json.NewDecoder(strings.NewReader(pos[1]))
		dec.UseNumber()
		if err := dec.Decode(&arguments); err != nil || dec.More() || arguments == nil {
			return usageError(stderr, fmt.Errorf("arguments %q are not a JSON object, such as '{\"path\": \"\"}'", pos[1]))
		}
	}
	ctx := context.Background()
	s, list, code := listedSession(ctx, *manifestFile, *workerBin, stderr)
	if s == nil {
		return code
	}
	defer s.close()
	var names []string
	for _, t := range list {
		names = append(names, t.Name)
	}
	if !slices.Contains(names, tool) {
		return usageError(stderr, fmt.Errorf("unknown tool %q; this manifest serves %s", tool, strings.Join(names, ", ")))
	}
	// A page is printed from its text content, the value as the worker
	// encoded it, so its keys keep the tool's order (items, next_cursor,
	// content_hash) that decoding structuredContent into a map would lose.
	// With --all each page is printed as it arrives, one JSON document a
	// line, so what was printed stays when a later page fails.
	for range maxPages {
		res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: arguments})
		if err != nil {
			fmt.Fprintf(stderr, "fsmcp-supervisor: %s: %v\n", tool, err)
			return 1
		}
		if res.IsError {
			fmt.Fprintf(stderr, "fsmcp-supervisor: %s: %s\n", tool, resultText(res))
			return 1
		}
		page := json.RawMessage(resultText(res))
		var cursor struct {
			Next *string `json:"next_cursor"`
		}
		if !json.Valid(page) || json.Unmarshal(page, &cursor) != nil {
			b, _ := json.Marshal(string(page))
			page = b
		}
		if !*all {
			return printJSON(stdout, stderr, page, "  ")
		}
		if code := printJSON(stdout, stderr, page, ""); code != 0 {
			return code
		}
		if cursor.Next == nil || *cursor.Next == "" {
			return 0
		}
		arguments["cursor"] = *cursor.Next
	}
	fmt.Fprintf(stderr, "fsmcp-supervisor: %s: still issuing cursors after %d pages; stopped\n", tool, maxPages)
	return 1
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// printJSON writes v as JSON on stdout, indented by indent ("" for one
// line).
func printJSON(stdout, stderr io.Writer, v any, indent string) int {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(stderr, "fsmcp-supervisor: %v\n", err)
		return 1
	}
	if _, err := stdout.Write(b.Bytes()); err != nil {
		fmt.Fprintf(stderr, "fsmcp-supervisor: %v\n", err)
		return 1
	}
	return 0
}

// parseCommand parses a command's args with fl, flags anywhere among the
// positional arguments, which valid must accept. When it does not go on
// (ok false) it has answered: --help prints the usage (code 0), a bad flag
// or arguments valid refuses print a line ending on the command's short
// usage (code 64).
func parseCommand(fl *flag.FlagSet, args []string, short string, valid func(pos []string) bool, stdout, stderr io.Writer) (pos []string, code int, ok bool) {
	pos, err := interleaved(fl, args)
	if code, done := flagResult(err, short, stdout, stderr); done {
		return nil, code, false
	}
	if !valid(pos) {
		fmt.Fprintln(stderr, "fsmcp-supervisor: "+short)
		return nil, exitUsage, false
	}
	return pos, 0, true
}

// flagResult answers a flag-parsing error: --help prints the usage (0), a
// bad flag one line (64); done reports that the command is over.
func flagResult(err error, short string, stdout, stderr io.Writer) (int, bool) {
	switch {
	case err == nil:
		return 0, false
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage)
		return 0, true
	}
	fmt.Fprintf(stderr, "fsmcp-supervisor: %v; %s\n", err, short)
	return exitUsage, true
}
