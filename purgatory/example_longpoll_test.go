package purgatory_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/purgatory"
	"github.com/gopurgatory/purgatory/timer"
)

// versioned is a value that changes, with a version that counts its
// changes: what a long-poll client waits on.
type versioned struct {
	mu      sync.Mutex
	version int
	value   string
}

// nextChange is a long-poll: it waits until the value is past the version
// the client has. OnComplete takes the answer; the handler writes it.
type nextChange struct {
	operation.State
	v     *versioned
	after int

	version int // the answer, set by OnComplete: read it after Done
	value   string
}

func (w *nextChange) TryComplete() bool {
	w.v.mu.Lock()
	defer w.v.mu.Unlock()
	return w.v.version > w.after
}

func (w *nextChange) OnComplete() {
	w.v.mu.Lock()
	defer w.v.mu.Unlock()
	w.version, w.value = w.v.version, w.v.value
}

// A long-poll: a client asks for what comes after the version it has,
// and is answered when it changes or, with nothing new, at its timeout.
// The writer calls CheckAndComplete on the key after each change; the
// handler waits on Done and answers from its own goroutine. See
// examples/longpoll for the whole HTTP service.
func Example_longPoll() {
	clk := timer.NewManualClock(0)
	waits, _ := purgatory.New[string]("longpoll", purgatory.WithClock(clk))
	defer waits.Close()
	flags := &versioned{}

	// The handler of GET /flags?after=N (ctx would be r.Context()).
	get := func(ctx context.Context, after int) *nextChange {
		w := &nextChange{v: flags, after: after}
		_, _ = waits.TryCompleteElseWatchContext(ctx, w, 30*time.Second, "flags")
		return w // the handler then blocks on <-w.Done() and writes the answer
	}
	// The handler of POST /flags.
	set := func(value string) {
		flags.mu.Lock()
		flags.version++
		flags.value = value
		flags.mu.Unlock()
		waits.CheckAndComplete("flags") // with the value's lock released
	}

	w := get(context.Background(), 0)
	clk.Advance(5 * time.Second)
	set("dark-mode=on")
	<-w.Done()
	fmt.Printf("%v: version %d %q (%v)\n", clk.Now(), w.version, w.value, w.Outcome())

	w = get(context.Background(), w.version) // the client asks for the next one
	clk.Advance(30 * time.Second)
	<-w.Done()
	fmt.Printf("%v: nothing after version %d (%v)\n", clk.Now(), w.after, w.Outcome())
	// Output:
	// 5s: version 1 "dark-mode=on" (completed)
	// 35s: nothing after version 1 (expired)
}
