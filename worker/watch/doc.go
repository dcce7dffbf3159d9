// Package watch tells whether anything in a set of watched files and
// directories has changed since each was watched, through one inotify(7)
// instance.
//
// A Set answers one question, Changed, and forgets everything once the answer
// is yes: the caller then builds what it derived from the watched objects
// anew, watching them again as it reads them. Every object must be watched
// before it is read, so that a change made after the read is always queued.
//
// A full watch reports every change to the object and, for a directory, to
// its entries (an entry created, deleted, renamed, written, truncated or
// with changed attributes). A file is watched as well as its directory, so
// that a write through a hard link elsewhere is reported too. A watch along
// one entry is for an ancestor of a watched tree: only a change to that
// entry (created, deleted, renamed) or to the directory itself counts, so a
// sibling's activity leaves the tree alone.
//
// inotify does not report a filesystem mounted or unmounted anywhere, nor
// what another machine or another client changes on a network or FUSE
// filesystem. So a Set also counts any change of the process's mount table
// as a change (tree_linux.go); it answers for a tree only where the tree's
// top is on a local filesystem with no mount point below it (Tree), and
// watches the way down to it only through local directories (Along).
//
// What inotify does not see on a local filesystem, a Set does not see
// either: writes through a shared memory mapping (until the writer closes
// the file), and a write through a hard link made after the file was
// watched to a file that had one link then (its directory's watch hears of
// neither the link nor the write).
//
// Where there is no inotify (every platform but Linux), a Set refuses every
// watch: what a caller would keep while its Set reports no change, it
// builds anew each time instead.
package watch
