package manifest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// MaxBytes is the largest manifest read: a manifest is a short YAML file,
// and the cap keeps a wrong path (a device, a huge log) from being read
// whole.
const MaxBytes = 1 << 20

// read reads a manifest file. The file is opened without blocking, so a
// FIFO with no writer is refused rather than waited on, and it must be a
// regular file of at most MaxBytes.
func read(file string) ([]byte, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("cannot read the manifest: %s", errText(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cannot read the manifest: %s", errText(err))
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("is %s, not a manifest file; give the path of a YAML file", fileKind(st.Mode()))
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("cannot read the manifest: %s", errText(err))
	case len(data) > MaxBytes:
		return nil, fmt.Errorf("is larger than %d bytes (1 MiB), the most a manifest may be; is this the manifest?", MaxBytes)
	}
	return data, nil
}

// fileKind names the type of a file that is not a regular one.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "a special file"
}

// errText is the reason of a file system error, without the path the
// message already names.
func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
