package textscan

// automaton is a dense Aho-Corasick automaton over a Matcher's terms: one
// table lookup per byte scanned, whatever the terms, their number, their
// length or the text. It is the scanner's linear-time path, taken where the
// anchor search (memchr for a rare byte, then a comparison) would compare
// more bytes than it scans (see Scanner.find), and the matcher for paths.
//
// Folding costs nothing here: with foldASCII, 'A' and 'a' fall in the same
// byte class, so the text is never copied or folded.
type automaton struct {
	// cls maps a byte to its class: 0 for every byte no term holds, one
	// class per distinct (folded) byte of the terms. Terms hold no '\n' or
	// '\r', so there are at most 255 classes.
	cls [256]uint8
	n   int // number of classes
	// tab[state*n+class] is the next state as its offset state*n, negated
	// when that state ends a term. The start state (offset 0) ends none.
	tab []int32
	// out[state] is the length of the longest term ending at that state
	// (0 for none).
	out []int32
}

// newAutomaton builds the automaton of terms (lower-cased when fold).
func newAutomaton(terms []term, fold bool) *automaton {
	a := &automaton{}
	var used [256]bool
	states := 1
	for _, t := range terms {
		for _, c := range t.b {
			used[c] = true
		}
		states += len(t.b)
	}
	a.n = 1 // class 0: bytes in no term
	for c := range used {
		if used[c] {
			a.cls[c] = uint8(a.n)
			a.n++
		}
	}
	if fold {
		for c := 'A'; c <= 'Z'; c++ {
			a.cls[c] = a.cls[lower[c]]
		}
	}
	n := a.n

	// The trie, in a dense table (-1: no edge yet).
	next := make([]int32, states*n)
	for i := range next {
		next[i] = -1
	}
	out := make([]int32, states)
	count := int32(1)
	for _, t := range terms {
		s := int32(0)
		for _, c := range t.b {
			k := int(s)*n + int(a.cls[c])
			if next[k] < 0 {
				next[k] = count
				count++
			}
			s = next[k]
		}
		out[s] = int32(len(t.b))
	}
	next, out = next[:int(count)*n], out[:count]

	// Failure links in breadth-first order turn the trie into a DFA: a
	// missing edge goes where the failure state's edge goes. A state that
	// ends no term of its own reports its longest suffix that does.
	fail := make([]int32, count)
	queue := make([]int32, 0, count)
	for c := range n {
		if k := next[c]; k < 0 {
			next[c] = 0
		} else {
			queue = append(queue, k)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		f := fail[s]
		if out[s] == 0 {
			out[s] = out[f]
		}
		for c := range n {
			k := int(s)*n + c
			if t := next[k]; t < 0 {
				next[k] = next[int(f)*n+c]
			} else {
				fail[t] = next[int(f)*n+c]
				queue = append(queue, t)
			}
		}
	}

	a.tab = next
	for i, t := range next {
		off := t * int32(n)
		if out[t] > 0 {
			off = -off
		}
		a.tab[i] = off
	}
	a.out = out
	return a
}

// find returns the start of the first term occurrence in buf that begins at
// or after from, taking occurrences in the order they end, or -1. The
// occurrence found lies on the first line (from from on) that holds any.
func find[T []byte | string](a *automaton, buf T, from int) int {
	_, _, start := next(a, buf, from, 0)
	return start
}

// next scans buf from i in state s (an offset as in tab; 0 to start
// afresh) up to the first byte that ends a term. It returns the offset
// after that byte and the state there, to resume from, and the start of the
// longest term ending there; or len(buf), s, -1 when no term ends in
// buf[i:].
func next[T []byte | string](a *automaton, buf T, i int, s int32) (int, int32, int) {
	tab, cls := a.tab, &a.cls
	for ; i < len(buf); i++ {
		s = tab[int(s)+int(cls[buf[i]])]
		if s < 0 {
			return i + 1, -s, i + 1 - int(a.out[int(-s)/a.n])
		}
	}
	return i, s, -1
}
