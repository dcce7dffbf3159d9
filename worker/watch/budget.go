package watch

import "sync"

// A Budget is a number of inotify watches that several holders share: the
// Sets made with NewIn, and holders of spare watches, ones kept only so that
// a later use is cheaper (the read guards' idle watches). Spare watches never
// stand in the way of a Set: when a Set finds the budget spent, the spare
// holder is asked to give its watches back first. It is safe for concurrent
// use.
type Budget struct {
	mu    sync.Mutex
	max   int
	used  int
	spare func() // gives the spare watches back; called without mu
}

// NewBudget returns a Budget of max watches.
func NewBudget(max int) *Budget { return &Budget{max: max} }

// OnShort sets the function that gives the spare watches back (with Give)
// when Take finds none left. It is called without any lock of the Budget
// held, so it may take its own.
func (b *Budget) OnShort(spare func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.spare = spare
}

// Take reserves one watch, first asking for the spare watches back when
// none is left, and reports whether it got one.
func (b *Budget) Take() bool {
	if b.take() {
		return true
	}
	b.mu.Lock()
	spare := b.spare
	b.mu.Unlock()
	if spare == nil {
		return false
	}
	spare()
	return b.take()
}

// TakeSpare reserves one watch for a spare holder, only out of what is
// left: it never makes anyone give a watch back.
func (b *Budget) TakeSpare() bool { return b.take() }

func (b *Budget) take() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used >= b.max {
		return false
	}
	b.used++
	return true
}

// Give returns n watches to the Budget.
func (b *Budget) Give(n int) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used = max(0, b.used-n)
}
