package rootproc

import (
	"runtime"
	"sync"

	"github.com/hashicorp/go-plugin"
)

// clientOnOwnThread calls client.Client(), which forks the worker, on a
// goroutine locked to an OS thread of its own, and keeps that thread until
// release is called (once the worker is gone).
//
// The worker's parent-death signal (setParentDeath) is tied to the thread
// that forked it: the kernel sends it when that thread ends, not only when
// the supervisor does. A goroutine that returns while locked to its thread
// ends the thread, so a worker forked from whatever thread the caller
// happened to run on could be killed by unrelated thread churn in the
// supervisor. A thread held for the worker's life ends only with it.
func clientOnOwnThread(client *plugin.Client) (rpc plugin.ClientProtocol, release func(), err error) {
	type result struct {
		rpc plugin.ClientProtocol
		err error
	}
	out := make(chan result, 1)
	held := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		rpc, err := client.Client()
		out <- result{rpc, err}
		<-held
		// The worker is gone: the thread may go back to the runtime.
		runtime.UnlockOSThread()
	}()
	r := <-out
	var once sync.Once
	return r.rpc, func() { once.Do(func() { close(held) }) }, r.err
}
