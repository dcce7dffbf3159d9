//go:build linux

package e2e

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The real-tree tests take ripgrep and find, run as subprocesses, as the
// oracle of what a traversal must return: rg names every line holding a
// term, find every regular file. The contract's serving rules are then
// applied on top, each written once below with its reason. Both tools
// already agree with the worker on symbolic links: neither follows one
// (rg without -L, find without -L), so nothing below a linked directory
// and no linked file appears, as the worker serves neither. Neither
// reports a file or folder it cannot read without failing, and the test
// with it: run as root (as CI runs), every file of these trees is
// readable; what the worker does with unreadable ones is tested on
// generated trees (TestWalkUnreadableDir, TestUnreadableFileAsUnprivilegedUser).

// ripgrep returns the rg binary, or fails the test saying how to install it.
func ripgrep(t testing.TB) string {
	t.Helper()
	rg, err := exec.LookPath("rg")
	if err != nil {
		t.Fatal("rg (ripgrep) is not on $PATH; the real-tree tests take it as their oracle: apt-get install -y ripgrep")
	}
	return rg
}

// builtinExcludes is the built-in exclude list of docs/reference.md ("The
// built-in exclude list"), which the worker applies unless started with
// --no-default-exclude. Each entry is matched against every segment of a
// path, ASCII letters folded.
var builtinExcludes = []string{
	"node_modules", "_build", "deps", "__pycache__", "bower_components",
	".git", ".hg", ".svn", ".venv", ".tox", ".next", ".nuxt",
	".gradle", ".terraform", ".turbo", ".cargo", ".bundle", ".elixir_ls",
	".mypy_cache", ".pytest_cache", ".parcel-cache", ".ruff_cache",
	".env", ".env.*", "*.pem", "*.p12", "*.pfx",
	"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk",
}

// servedPath reports whether the worker, started with --include '**' and
// the built-in excludes, serves the regular file at p (relative to the
// root, '/'-separated):
//   - every segment is UTF-8: a name that is not cannot be spelled in a
//     JSON call, so such a file is not served and such a directory not
//     entered (docs/reference.md, "Names and unreadable directories");
//   - no segment matches the built-in exclude list, letters folded: an
//     excluded directory is not entered, an excluded file not served;
//   - it is not one of the worker's own temporary write files
//     (.fsmcp-write-*.tmp in the root itself), which no tool shows.
func servedPath(p string) bool {
	segs := strings.Split(p, "/")
	for _, s := range segs {
		if !utf8.ValidString(s) {
			return false
		}
		for _, x := range builtinExcludes {
			if ok, _ := path.Match(x, asciiLower(s)); ok {
				return false
			}
		}
	}
	return len(segs) > 1 || !(strings.HasPrefix(p, ".fsmcp-write-") && strings.HasSuffix(p, ".tmp") && len(p) > len(".fsmcp-write-.tmp"))
}

// binaryHead is how much of a file's opening search_text judges.
const binaryHead = 8 << 10

// skippedAsBinary reports whether search_text skips a file whole, given its
// first min(size, 8 KiB) bytes (docs/design.md, "How search_text scans"):
// some single line within them both holds a NUL and is not UTF-8. Either
// signal alone is common in real text, so a file with a NUL on one line
// and a bad byte on another is text. The line that the 8 KiB mark cuts
// (in a longer file) is judged on the bytes before the mark, a UTF-8
// sequence truncated by the mark not counting as invalid. rg's own
// binary detection (any NUL) differs, so rg runs with -a and this rule
// is applied to the files it names.
func skippedAsBinary(head []byte, size int64) bool {
	cut := size > binaryHead
	for len(head) > 0 {
		line, rest, found := bytes.Cut(head, []byte("\n"))
		if !found && cut {
			line = trimCutRune(line)
		}
		if bytes.IndexByte(line, 0) >= 0 && !utf8.Valid(line) {
			return true
		}
		head = rest
	}
	return false
}

// trimCutRune drops from b a UTF-8 sequence its end cuts short.
func trimCutRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

// fileHead reads the first 8 KiB of the file at name and its size.
func fileHead(name string) ([]byte, int64, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	head := make([]byte, binaryHead)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, 0, err
	}
	return head[:n], st.Size(), nil
}

// rgRun is one ripgrep run's output: every line it reports, and how long
// it took.
type rgRun struct {
	lines []rgLine
	took  time.Duration
}

// rgLine is one line rg reports: the file (relative to the root), its
// 1-based number and its bytes without the newline.
type rgLine struct {
	path string
	line int
	text string
}

// runRipgrep lists every line of the files below dir (relative to root;
// "" is the root) holding one of terms, folding ASCII letters if fold:
//   - -F: terms are literal;
//   - -i --no-unicode: the fold is ASCII-only, as case_insensitive's;
//   - -a: every file is searched as text (skippedAsBinary decides);
//   - -E none: bytes as they are, a byte order mark included, no UTF-16
//     transcoding, as the worker reads them;
//   - --hidden --no-ignore --no-config: hidden files are served and no
//     ignore file means anything to the worker.
//
// Lines come as rg prints them with --null: the path, a NUL, the line
// number, a colon, the line's bytes and a newline (a line's bytes hold no
// newline, a path no NUL).
func runRipgrep(t testing.TB, root, dir string, terms []string, fold bool) rgRun {
	t.Helper()
	args := []string{"--no-config", "-F", "-n", "--null", "--no-heading", "--color", "never", "-a", "-E", "none", "--hidden", "--no-ignore"}
	if fold {
		args = append(args, "-i", "--no-unicode")
	}
	for _, term := range terms {
		args = append(args, "-e", term)
	}
	start := root
	if dir != "" {
		start = root + "/" + dir
	}
	cmd := exec.Command(ripgrep(t), append(args, "--", start)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	began := time.Now()
	out, err := cmd.Output()
	took := time.Since(began)
	// Exit status 1 is "no line matched"; anything else is a failure.
	if err != nil && !(cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == 1 && stderr.Len() == 0) {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, stderr.Bytes())
	}
	var lines []rgLine
	for len(out) > 0 {
		p, rest, ok1 := bytes.Cut(out, []byte{0})
		num, rest, ok2 := bytes.Cut(rest, []byte(":"))
		text, rest, ok3 := bytes.Cut(rest, []byte("\n"))
		n, err := strconv.Atoi(string(num))
		rel, ok4 := strings.CutPrefix(string(p), root+"/")
		if !ok1 || !ok2 || !ok3 || err != nil || !ok4 {
			t.Fatalf("%s: cannot read its output at %.200q", strings.Join(cmd.Args, " "), out)
		}
		lines = append(lines, rgLine{rel, n, string(text)})
		out = rest
	}
	return rgRun{lines, took}
}

// wantTextHits is what search_text must return, in order, for rg's lines
// below root: the lines of served files that are not skipped as binary,
// each reported with its evidence (wantEvidence) and only if that is
// UTF-8, as a line that is not is skipped alone. heads reads a file's
// opening (fileHead, or the state of a changing copy).
func wantTextHits(t testing.TB, lines []rgLine, head func(rel string) ([]byte, int64, error)) []textHit {
	t.Helper()
	binary := map[string]bool{}
	var out []textHit
	for _, l := range lines {
		if !servedPath(l.path) {
			continue
		}
		skip, seen := binary[l.path]
		if !seen {
			h, size, err := head(l.path)
			if err != nil {
				t.Fatalf("reading the opening of %s: %v", l.path, err)
			}
			skip = skippedAsBinary(h, size)
			binary[l.path] = skip
		}
		if ev := wantEvidence(l.text); !skip && utf8.ValidString(ev) {
			out = append(out, textHit{l.path, l.line, ev})
		}
	}
	slices.SortFunc(out, compareHits)
	return out
}

// compareHits orders hits as search_text returns them: by path bytewise,
// then by line.
func compareHits(a, b textHit) int {
	if c := strings.Compare(a.Path, b.Path); c != 0 {
		return c
	}
	return a.Line - b.Line
}

// runFind lists the regular files below dir (relative to root; "" is the
// root), relative to root, in byte order. find -type f names regular files
// only, as the worker serves: no link, FIFO, socket or device.
func runFind(t testing.TB, root, dir string) []string {
	t.Helper()
	start := root
	if dir != "" {
		start = root + "/" + dir
	}
	cmd := exec.Command("find", start, "-type", "f", "-printf", "%P\\0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, stderr.Bytes())
	}
	var files []string
	for _, p := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if p == "" {
			continue
		}
		if dir != "" {
			p = dir + "/" + p
		}
		files = append(files, p)
	}
	slices.Sort(files)
	return files
}

// servedFiles keeps the files the worker serves (servedPath).
func servedFiles(files []string) []string {
	var out []string
	for _, f := range files {
		if servedPath(f) {
			out = append(out, f)
		}
	}
	return out
}

// wantFoundPaths is what search_files must return for served files (in
// order): those whose path from the root holds one of terms, ASCII
// letters folded if fold.
func wantFoundPaths(served []string, terms []string, fold bool) []pathHit {
	var out []pathHit
	for _, f := range served {
		hay := f
		if fold {
			hay = asciiLower(f)
		}
		for _, term := range terms {
			if fold {
				term = asciiLower(term)
			}
			if strings.Contains(hay, term) {
				out = append(out, pathHit{f})
				break
			}
		}
	}
	return out
}

// wantListing is what list_directory must return for dir given the served
// files (in order): each file directly in dir, and each directory in dir
// holding a served file at any depth, sorted by name.
func wantListing(served []string, dir string) []entryItem {
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	var out []entryItem
	seen := map[string]bool{}
	for _, f := range served {
		rest, ok := strings.CutPrefix(f, prefix)
		if !ok {
			continue
		}
		name, _, deeper := strings.Cut(rest, "/")
		if seen[name] {
			continue
		}
		seen[name] = true
		kind := "file"
		if deeper {
			kind = "directory"
		}
		out = append(out, entryItem{Name: name, Kind: kind, Path: prefix + name})
	}
	slices.SortFunc(out, func(a, b entryItem) int { return strings.Compare(a.Name, b.Name) })
	return out
}
