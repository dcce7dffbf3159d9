package wire

import "syscall"

// pipeCloexec makes a pipe whose ends are closed on exec. macOS has no
// pipe2, so the ends are marked after they are made, under the lock that
// keeps a process started meanwhile from inheriting them unmarked.
func pipeCloexec(p []int) error {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	if err := syscall.Pipe(p); err != nil {
		return err
	}
	syscall.CloseOnExec(p[0])
	syscall.CloseOnExec(p[1])
	return nil
}
