package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// envelope is what a request may hold besides its one large argument: the
// method, the id, _meta, the tool's name and its other arguments.
const envelope = 64 << 10

// MaxLineFor is the line limit that admits a write_text_file call of
// maxWrite bytes of text, escaped at worst six bytes per byte, with room for
// the rest of the request; never less than DefaultMaxLine.
func MaxLineFor(maxWrite int64) int {
	return int(max(DefaultMaxLine, 6*maxWrite+envelope))
}

// MaxTextFor is the text limit (see Transport.MaxText) that admits a
// write_text_file call of maxWrite bytes with room for the rest of the
// request; never less than DefaultMaxLine.
func MaxTextFor(maxWrite int64) int {
	return int(max(DefaultMaxLine, maxWrite+envelope))
}

// lineReader reads a connection's input one line at a time and refuses a
// line past its limits while reading it: from the byte that passes a limit
// on, the line is read through and dropped, so no more than the limit is
// ever held of it.
type lineReader struct {
	r       *bufio.Reader
	maxLine int // bytes of one line
	maxText int // bytes of one line once its escapes are decoded
}

// refusal is a line refused while it was read: the id it carries (nil if
// none was found) and why it was refused.
type refusal struct {
	id  json.RawMessage
	why string
}

// next returns the next line without its newline, or the refusal of a line
// past a limit. err is the reader's error, with the line read before it.
//
// A line longer than the reader's buffer is kept as the buffer-sized
// pieces it arrives in and joined once it is whole: one copy more than the
// read, where growing one slice would copy it about five times over and
// leave as much garbage.
func (lr *lineReader) next() (line []byte, refused *refusal, err error) {
	var pieces [][]byte
	size := 0
	var esc escapes // counted only once the line could pass maxText
	escPieces := 0  // pieces counted so far
	for {
		frag, err := lr.r.ReadSlice('\n')
		more := errors.Is(err, bufio.ErrBufferFull)
		body := frag
		if !more {
			body = bytes.TrimSuffix(frag, []byte{'\n'})
		}
		n := size + len(body)
		var why string
		switch {
		case n > lr.maxLine:
			why = fmt.Sprintf("message line exceeds %d bytes; it was skipped", lr.maxLine)
		case n > lr.maxText:
			for ; escPieces < len(pieces); escPieces++ {
				esc.count(pieces[escPieces])
			}
			esc.count(body)
			escPieces++ // body, the next piece if the line goes on
			if n-esc.saved > lr.maxText {
				why = fmt.Sprintf("message line exceeds %d bytes once its escapes are decoded; it was skipped", lr.maxText)
			}
		}
		if why != "" {
			id, err := lr.dropRest(pieces, body, more, err)
			return nil, &refusal{id: id, why: why}, err
		}
		if more {
			pieces = append(pieces, bytes.Clone(frag))
			size = n
			continue
		}
		if pieces == nil {
			return body, nil, err
		}
		line = make([]byte, 0, n)
		for _, p := range pieces {
			line = append(line, p...)
		}
		return append(line, body...), nil, err
	}
}

// dropRest reads the rest of a refused line and drops it, keeping only
// what finds the line's id. The line starts with pieces and then body;
// more tells whether it goes on, and err is the error of the read that
// gave body.
func (lr *lineReader) dropRest(pieces [][]byte, body []byte, more bool, err error) (json.RawMessage, error) {
	var f idFinder
	for _, p := range pieces {
		f.feed(p)
	}
	f.feed(body)
	for more {
		var frag []byte
		frag, err = lr.r.ReadSlice('\n')
		if more = errors.Is(err, bufio.ErrBufferFull); more {
			f.feed(frag)
		} else {
			f.feed(bytes.TrimSuffix(frag, []byte{'\n'}))
		}
	}
	return f.result(), err
}

// escapes counts how many bytes a line's escape sequences save once
// decoded, at least: a two-byte escape (\n, \") decodes to one byte, and a
// six-byte \uXXXX to one at least. The count carries over between pieces
// of the line fed in order.
type escapes struct {
	counted int // bytes fed so far
	saved   int
	pending bool // the last piece ended with a backslash that starts an escape
}

func (e *escapes) count(b []byte) {
	e.counted += len(b)
	i := 0
	if e.pending && len(b) > 0 {
		e.pending = false
		e.saved += escapeSaves(b[0])
		i = 1
	}
	for {
		j := bytes.IndexByte(b[i:], '\\')
		if j < 0 {
			return
		}
		i += j + 1
		if i == len(b) {
			e.pending = true
			return
		}
		e.saved += escapeSaves(b[i])
		i++
	}
}

// escapeSaves is what an escape whose letter is c saves at least.
func escapeSaves(c byte) int {
	if c == 'u' {
		return 5
	}
	return 1
}

// idFinder finds the id of a JSON-RPC message in a line fed to it piece by
// piece, keeping a few bytes: the value of the first "id" member of the
// top-level object, when it is a string or a number of at most maxIDLen
// bytes. It reads structure only, without checking the JSON is valid; it
// is for lines refused unread, whose id is wanted wherever it is (an SDK
// may write it after the params).
type idFinder struct {
	started, done bool
	depth         int
	inString      bool
	escaped       bool
	key           []byte // the top-level key being read (its first maxKeyLen bytes)
	expectKey     bool   // at the top level, the next string is a key
	isID          bool   // the key read last is "id"
	value         []byte // the id's value being read
	reading       bool   // value holds the start of the id's value
	id            json.RawMessage
}

// maxIDLen bounds the id a refused line is answered with.
const maxIDLen = 1024

// maxKeyLen is the longest key, as written, that can still be "id": with
// both letters escaped ("\u0069\u0064"), 14 bytes.
const maxKeyLen = 16

func (f *idFinder) feed(b []byte) {
	for i := 0; i < len(b) && !f.done; i++ {
		c := b[i]
		switch {
		case f.inString:
			// Skip the bulk of a long string at once.
			if !f.reading && f.key == nil && !f.escaped {
				j := stringStop(b[i:])
				if j < 0 {
					return
				}
				i += j
				c = b[i]
			}
			f.stringByte(c)
		case f.reading:
			f.numberByte(c)
		default:
			f.structByte(c)
		}
	}
}

// stringStop is the index of the first quote or backslash in b, or -1.
func stringStop(b []byte) int {
	q := bytes.IndexByte(b, '"')
	if q < 0 {
		q = len(b)
	}
	if s := bytes.IndexByte(b[:q], '\\'); s >= 0 {
		return s
	}
	if q == len(b) {
		return -1
	}
	return q
}

// stringByte takes byte c of a string.
func (f *idFinder) stringByte(c byte) {
	switch {
	case f.escaped:
		f.escaped = false
	case c == '\\':
		f.escaped = true
	case c == '"':
		f.inString = false
	}
	switch {
	case f.reading:
		f.keep(c)
		if !f.inString {
			f.finish()
		}
	case f.key != nil:
		if len(f.key) <= maxKeyLen {
			f.key = append(f.key, c)
		}
		if !f.inString {
			var k string
			f.isID = len(f.key) <= maxKeyLen && json.Unmarshal(f.key, &k) == nil && k == "id"
			f.key = nil
		}
	}
}

// numberByte takes byte c of a number that is the id's value.
func (f *idFinder) numberByte(c byte) {
	if c == ',' || c == '}' || c == ' ' || c == '\t' || c == '\r' || c == '\n' {
		f.finish()
		return
	}
	f.keep(c)
}

// structByte takes byte c outside strings.
func (f *idFinder) structByte(c byte) {
	if !f.started {
		switch c {
		case ' ', '\t', '\r', '\n':
			return
		case '{':
			f.started, f.depth, f.expectKey = true, 1, true
		default:
			f.done = true // not an object: no id
		}
		return
	}
	switch c {
	case '"':
		f.inString = true
		switch {
		case f.depth == 1 && f.expectKey:
			f.key, f.expectKey = []byte{'"'}, false
		case f.depth == 1 && f.isID:
			f.isID, f.reading, f.value = false, true, []byte{'"'}
		}
	case '{', '[':
		if f.depth == 1 && f.isID {
			f.done = true // the id is not a string or a number
			return
		}
		f.depth++
	case '}', ']':
		if f.depth--; f.depth == 0 {
			f.done = true
		}
	case ',':
		f.expectKey = f.depth == 1
		f.isID = false
	case ':', ' ', '\t', '\r', '\n':
	default:
		if f.depth == 1 && f.isID {
			// The first id member decides: a number is read, anything
			// else (null, true, a typo) is no usable id.
			f.isID, f.done = false, c != '-' && (c < '0' || c > '9')
			if !f.done {
				f.reading, f.value = true, []byte{c}
			}
		}
	}
}

// keep adds c to the id's value, giving up on an id too long to answer with.
func (f *idFinder) keep(c byte) {
	if len(f.value) >= maxIDLen {
		f.done, f.value = true, nil
		return
	}
	f.value = append(f.value, c)
}

// finish ends the id's value: the first id member decides.
func (f *idFinder) finish() {
	f.reading, f.done = false, true
	if json.Valid(f.value) && isID(f.value) {
		f.id = f.value
	}
}

// result is the id found, or nil.
func (f *idFinder) result() json.RawMessage {
	if f.reading && !f.done {
		// The line ended inside a number: it is complete.
		f.finish()
	}
	return f.id
}
