// Command barerelay is the least a process between a host and a worker can
// do: it starts the command its arguments name and copies its own standard
// input to the command's, and the command's standard output to its own,
// as bytes, parsing nothing.
//
//	barerelay fsmcp-worker --root DIR ...
//
// BenchmarkSupervisorHop runs a worker behind it beside the same worker
// behind the supervisor and alone: what one more process in the path costs
// on the machine, with no routing, no quotas and no JSON, is the floor of
// the supervisor's hop.
package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: barerelay COMMAND [ARG...]")
		os.Exit(64)
	}
	os.Exit(run(os.Args[1], os.Args[2:]))
}

func run(name string, args []string) int {
	cmd := exec.Command(name, args...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return fail(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fail(err)
	}
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	go func() {
		_, _ = io.Copy(in, os.Stdin)
		_ = in.Close() // end of input reaches the command
	}()
	_, _ = io.Copy(os.Stdout, out)
	if err := cmd.Wait(); err != nil {
		return fail(err)
	}
	return 0
}

func fail(err error) int {
	fmt.Fprintf(os.Stderr, "barerelay: %v\n", err)
	return 1
}
