package wire

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// The call channel: besides the gRPC connection go-plugin sets up, the
// supervisor hands each worker two unnamed pipes, one carrying requests to
// the worker and one carrying its answers back, and relays tools/call over
// them as JSON lines, the worker's stdio protocol. gRPC still carries
// everything else (the session the supervisor lists tools on, and the calls
// it cannot relay).
//
// Pipes, not a socket pair: reading a socket wakes every poller waiting on
// its peer's end (the peer's descriptor becomes writable again), so each
// line read woke the other process's idle poller thread for nothing, once
// a call on each side. A pipe wakes its writer only when it was full.
//
// The pipes have no name in the file system, so nothing can open them:
// their ends exist only in the supervisor and, inherited through exec at
// descriptors CallsInFD and CallsOutFD, in the one worker they were made
// for. That makes them as private as the worker's own stdin and stdout,
// which is why the channel needs no TLS, unlike go-plugin's listening
// socket.

// CallsInFlight is the most relayed calls the supervisor has in flight to
// one worker at a time. The worker takes that many, plus room for the
// supervisor's health probes, before it refuses calls on the channel
// (jsonl.CodeBusy).
const CallsInFlight = 64

// callsReadAhead is how many messages past CallsInFlight the worker reads
// from the call channel: probes, which must not wait behind the calls.
const callsReadAhead = 4

// CallsEnv names the environment variable by which the supervisor tells a
// worker the descriptors of its ends of the call channel.
const CallsEnv = "FSMCP_WORKER_CALLS_FD"

// The worker's descriptors of the call channel: the first two of
// exec.Cmd.ExtraFiles (CallEnds.ExtraFiles).
const (
	CallsInFD  = 3 // the requests, read by the worker
	CallsOutFD = 4 // the answers, written by the worker
)

// CallEnds are one side's ends of the call channel: In is read, Out is
// written.
type CallEnds struct {
	In, Out *os.File
}

// Close closes both ends.
func (e CallEnds) Close() error {
	return errors.Join(e.In.Close(), e.Out.Close())
}

// ExtraFiles are the ends in the order exec.Cmd.ExtraFiles must list them
// for the worker to find them at CallsInFD and CallsOutFD.
func (e CallEnds) ExtraFiles() []*os.File { return []*os.File{e.In, e.Out} }

// CallsPipes makes a call channel: the supervisor's ends, and the worker's,
// to pass as the first exec.Cmd.ExtraFiles entries (remote.ExtraFiles,
// with CallsEnvValue in the environment), which the supervisor closes once
// the worker has started. The supervisor's ends are non-blocking, so the
// runtime's poller waits on them.
func CallsPipes() (local, remote CallEnds, err error) {
	var req, ans [2]int
	if err := pipeCloexec(req[:]); err != nil {
		return CallEnds{}, CallEnds{}, fmt.Errorf("wire: call channel: %w", err)
	}
	if err := pipeCloexec(ans[:]); err != nil {
		closeFDs(req[0], req[1])
		return CallEnds{}, CallEnds{}, fmt.Errorf("wire: call channel: %w", err)
	}
	// The supervisor reads answers (ans[0]) and writes requests (req[1]).
	for _, fd := range []int{ans[0], req[1]} {
		if err := syscall.SetNonblock(fd, true); err != nil {
			closeFDs(req[0], req[1], ans[0], ans[1])
			return CallEnds{}, CallEnds{}, fmt.Errorf("wire: call channel: %w", err)
		}
	}
	local = CallEnds{In: os.NewFile(uintptr(ans[0]), "fsmcp-calls-answers"), Out: os.NewFile(uintptr(req[1]), "fsmcp-calls-requests")}
	remote = CallEnds{In: os.NewFile(uintptr(req[0]), "fsmcp-calls-worker-requests"), Out: os.NewFile(uintptr(ans[1]), "fsmcp-calls-worker-answers")}
	return local, remote, nil
}

func closeFDs(fds ...int) {
	for _, fd := range fds {
		_ = syscall.Close(fd)
	}
}

// callsEnvValue is what CallsEnv holds: the two descriptors, in, out.
var callsEnvValue = strconv.Itoa(CallsInFD) + "," + strconv.Itoa(CallsOutFD)

// CallsEnvValue is the CallsEnv entry for a worker's environment.
func CallsEnvValue() string { return CallsEnv + "=" + callsEnvValue }

// Calls returns the worker's ends of the call channel; ok is false when the
// supervisor passed none (the variable is absent). The descriptors must be
// a pipe open for reading at CallsInFD and one open for writing at
// CallsOutFD; anything else is an error.
func Calls() (ends CallEnds, ok bool, err error) {
	v, set := os.LookupEnv(CallsEnv)
	if !set {
		return CallEnds{}, false, nil
	}
	if v != callsEnvValue {
		return CallEnds{}, false, fmt.Errorf("wire: %s=%q: want %q", CallsEnv, v, callsEnvValue)
	}
	if err := checkPipeEnd("call channel", CallsInFD, syscall.O_RDONLY); err != nil {
		return CallEnds{}, false, err
	}
	if err := checkPipeEnd("call channel", CallsOutFD, syscall.O_WRONLY); err != nil {
		return CallEnds{}, false, err
	}
	for _, fd := range []int{CallsInFD, CallsOutFD} {
		syscall.CloseOnExec(fd)
		// Non-blocking before os.NewFile, which then has the runtime's
		// poller wait on it.
		if err := syscall.SetNonblock(fd, true); err != nil {
			return CallEnds{}, false, fmt.Errorf("wire: call channel descriptor %d: %w", fd, err)
		}
	}
	return CallEnds{In: os.NewFile(CallsInFD, "fsmcp-calls-requests"), Out: os.NewFile(CallsOutFD, "fsmcp-calls-answers")}, true, nil
}

// checkPipeEnd checks that fd, the descriptor of what, is a pipe open with
// access mode mode.
func checkPipeEnd(what string, fd, mode int) error {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return fmt.Errorf("wire: %s descriptor %d: %w", what, fd, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		return fmt.Errorf("wire: %s descriptor %d is not a pipe", what, fd)
	}
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return fmt.Errorf("wire: %s descriptor %d: %w", what, fd, err)
	}
	if flags&syscall.O_ACCMODE != mode {
		return fmt.Errorf("wire: %s descriptor %d is open for the wrong direction", what, fd)
	}
	return nil
}
