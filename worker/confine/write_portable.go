//go:build !linux || fsmcp_portable

package confine

// writeTemp writes data to a new file in the root, gives it dest's
// metadata, fsyncs it, and returns it under the temporary name it has
// there. The portable backend has no O_TMPFILE: the file is created under
// its temporary name, and a worker killed while writing leaves that file,
// which no tool serves.
func (r *Root) writeTemp(rootfd int, data []byte, dest *destination) (tempFile, error) {
	return namedTemp(rootfd, data, dest)
}
