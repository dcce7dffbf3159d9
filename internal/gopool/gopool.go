// Package gopool runs functions on goroutines kept from earlier ones.
//
// A new goroutine starts on a small stack (2 KiB) and grows it by copying
// as its calls deepen: a tool call's handler, or a search page's scan,
// grows a fresh one to 16-32 KiB each time, and the copies cost tens of
// microseconds a call. A goroutine that has run such a function and waits
// for the next keeps the stack it grew.
package gopool

import "sync"

// A Pool keeps up to a bound of goroutines waiting for functions to run.
type Pool struct {
	mu      sync.Mutex
	idle    []chan func() // each waiting goroutine's, the last to wait last
	maxIdle int
}

// New returns a Pool that keeps up to maxIdle goroutines waiting.
func New(maxIdle int) *Pool { return &Pool{maxIdle: maxIdle} }

// Go runs f on the goroutine of p's that waited last, or on a new
// goroutine when none waits, as the go statement would. It does not wait
// for f.
func (p *Pool) Go(f func()) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		c <- f // buffered: never blocks
		return
	}
	p.mu.Unlock()
	go p.run(f)
}

// run runs f, then waits for the next function while p keeps fewer than
// maxIdle goroutines waiting; it returns otherwise.
func (p *Pool) run(f func()) {
	c := make(chan func(), 1)
	for {
		f()
		p.mu.Lock()
		if len(p.idle) >= p.maxIdle {
			p.mu.Unlock()
			return
		}
		p.idle = append(p.idle, c)
		p.mu.Unlock()
		f = <-c
	}
}

// Idle reports how many goroutines of p wait for a function.
func (p *Pool) Idle() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// shared is the worker's pool: a call's handler and a page's scanning
// goroutines (at most a few of each at a time).
var shared = New(8)

// Go runs f on a goroutine of the worker's shared pool; see Pool.Go.
func Go(f func()) { shared.Go(f) }
