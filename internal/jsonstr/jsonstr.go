// Package jsonstr crosses JSON strings without reading them a byte at a
// time: most of a JSON-RPC message's bytes are in its strings (a page's
// text), and bytes.IndexByte finds their ends many bytes at a time. On
// that it crosses whole values, and walks an object's members, without
// decoding them.
package jsonstr

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// End returns the index of the quote that ends the JSON string whose
// contents begin at data[from] (just past its opening quote), or len(data)
// if no quote does. A quote is escaped when an odd number of backslashes
// stands right before it.
func End(data []byte, from int) int {
	for i := from; ; {
		q := bytes.IndexByte(data[i:], '"')
		if q < 0 {
			return len(data)
		}
		end, slashes := i+q, 0
		for k := end - 1; k >= from && data[k] == '\\'; k-- {
			slashes++
		}
		if slashes%2 == 0 {
			return end
		}
		i = end + 1
	}
}

// ValueEnd returns the index just past the JSON value that starts at
// data[from] (after any white space), or -1 where none ends within data.
// It finds where a value ends in data known to be valid JSON (a message
// already parsed); it does not check the value.
func ValueEnd(data []byte, from int) int {
	i := skipSpace(data, from)
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		if e := End(data, i+1); e < len(data) {
			return e + 1
		}
		return -1
	case '{', '[':
		depth := 0
		for ; i < len(data); i++ {
			switch data[i] {
			case '"':
				if i = End(data, i+1); i >= len(data) {
					return -1
				}
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	// A number, true, false or null.
	for k := i; k < len(data); k++ {
		switch data[k] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return k
		}
	}
	return len(data)
}

// Members calls fn with each member of the JSON object in data, in order:
// its key as written (quotes and escapes included) and its value. It
// reports false, having called fn for the members before, where data is
// not one object, white space around it aside. Like ValueEnd it reads
// valid JSON; it checks the object's punctuation, not its values.
func Members(data []byte, fn func(key, value []byte)) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return skipSpace(data, i+1) == len(data)
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return false
		}
		ke := End(data, i+1)
		if ke >= len(data) {
			return false
		}
		key := data[i : ke+1]
		i = skipSpace(data, ke+1)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		vs := skipSpace(data, i+1)
		ve := ValueEnd(data, vs)
		if ve < 0 {
			return false
		}
		fn(key, data[vs:ve])
		i = skipSpace(data, ve)
		switch {
		case i < len(data) && data[i] == ',':
			i = skipSpace(data, i+1)
		case i < len(data) && data[i] == '}':
			return skipSpace(data, i+1) == len(data)
		default:
			return false
		}
	}
}

// UniqueMembers walks the members of the JSON object in data as Members
// does, stopping at the first member fn refuses. It reports false where
// data is not one object, a key is written with an escape or twice (keys
// whose meaning a decoder settles, not a byte comparison), or fn refused
// a member.
func UniqueMembers(data []byte, fn func(key, value []byte) bool) bool {
	ok := true
	var seen [][]byte
	if !Members(data, func(k, v []byte) {
		if !ok {
			return
		}
		if bytes.IndexByte(k, '\\') >= 0 {
			ok = false
			return
		}
		for _, s := range seen {
			if bytes.Equal(s, k) {
				ok = false
				return
			}
		}
		seen = append(seen, k)
		ok = fn(k, v)
	}) {
		return false
	}
	return ok
}

// Unquote returns the string the JSON string v (its quotes included)
// stands for, or false when v is not one. It decodes as encoding/json
// does, bytes that are not UTF-8 becoming U+FFFD; a string with neither
// escapes nor such bytes is only copied.
func Unquote(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	if v[len(v)-1] == '"' && bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v) {
		return string(v[1 : len(v)-1]), true
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// skipSpace returns the index of the first byte from i on that is not
// JSON white space, or len(data).
func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}
