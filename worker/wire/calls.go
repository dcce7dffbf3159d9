package wire

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// The call channel: besides the gRPC connection go-plugin sets up, the
// supervisor hands each worker one end of an unnamed Unix socket pair and
// relays tools/call over it as JSON lines, the worker's stdio protocol.
// gRPC still carries everything else (the session the supervisor lists
// tools on, and the calls it cannot relay).
//
// The pair has no name in the file system or the abstract namespace, so
// nothing can connect to it: its ends exist only in the supervisor and,
// inherited through exec at descriptor CallsFD, in the one worker it was
// made for. That makes it as private as the worker's own stdin and stdout,
// which is why it needs no TLS, unlike go-plugin's listening socket.

// CallsInFlight is the most relayed calls the supervisor has in flight to
// one worker at a time. The worker takes that many, plus room for the
// supervisor's health probes, before it refuses calls on the channel
// (jsonl.CodeBusy).
const CallsInFlight = 64

// callsReadAhead is how many messages past CallsInFlight the worker reads
// from the call channel: probes, which must not wait behind the calls.
const callsReadAhead = 4

// CallsEnv names the environment variable by which the supervisor tells a
// worker the descriptor of its end of the call channel.
const CallsEnv = "FSMCP_WORKER_CALLS_FD"

// CallsFD is the worker's descriptor of the call channel: the first of
// exec.Cmd.ExtraFiles.
const CallsFD = 3

// CallsPair makes a call channel: the supervisor's end, and the end to pass
// to the worker as its first exec.Cmd.ExtraFiles entry (with CallsEnv set
// to CallsFD), which the supervisor closes once the worker has started.
// The supervisor's end is non-blocking, so the runtime's poller waits on
// it.
func CallsPair() (local, remote *os.File, err error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("wire: call channel: %w", err)
	}
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		syscall.Close(fds[0])
		syscall.Close(fds[1])
		return nil, nil, fmt.Errorf("wire: call channel: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "fsmcp-calls"), os.NewFile(uintptr(fds[1]), "fsmcp-calls-worker"), nil
}

// CallsEnvValue is the CallsEnv entry for a worker's environment.
func CallsEnvValue() string { return CallsEnv + "=" + strconv.Itoa(CallsFD) }

// Calls returns the worker's end of the call channel, or nil when the
// supervisor passed none (an older supervisor, or the variable is absent).
// The descriptor must be a Unix stream socket; anything else is an error.
func Calls() (*os.File, error) {
	v, ok := os.LookupEnv(CallsEnv)
	if !ok {
		return nil, nil
	}
	fd, err := strconv.Atoi(v)
	if err != nil || fd != CallsFD {
		return nil, fmt.Errorf("wire: %s=%q: want %d", CallsEnv, v, CallsFD)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("wire: call channel descriptor %d: %w", fd, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
		return nil, fmt.Errorf("wire: call channel descriptor %d is not a socket", fd)
	}
	syscall.CloseOnExec(fd)
	if err := syscall.SetNonblock(fd, true); err != nil {
		return nil, fmt.Errorf("wire: call channel descriptor %d: %w", fd, err)
	}
	return os.NewFile(uintptr(fd), "fsmcp-calls"), nil
}
