// Package jsonstr crosses JSON strings without reading them a byte at a
// time: most of a JSON-RPC message's bytes are in its strings (a page's
// text), and bytes.IndexByte finds their ends many bytes at a time.
package jsonstr

import "bytes"

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
