// Package panics writes the panics the library recovers to standard error
// when nobody gave it a logger, as net/http writes a handler's panic to the
// standard logger: a recovered panic is never silent. Each place a panic
// can come from (a purgatory's OnComplete, a timer's task) is written at
// most once a minute, with its stack; the others in that minute are
// counted, and the next report says how many.
package panics

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// interval is how often one site is written at most.
const interval = time.Minute

var (
	mu    sync.Mutex // guards the following
	out   io.Writer  = os.Stderr
	now              = time.Now
	sites            = map[string]*site{}
)

type site struct {
	last       time.Time
	suppressed int
}

// Report writes the panic v recovered at site (which names where it came
// from: "purgatory fetch: OnComplete") with its stack, unless that site was
// written less than a minute ago, in which case it is counted for the next
// report. It never panics and never blocks for long: a write to standard
// error.
func Report(where string, v any, stack []byte) {
	mu.Lock()
	defer mu.Unlock()
	t := now()
	s := sites[where]
	if s == nil {
		s = &site{}
		sites[where] = s
	} else if t.Sub(s.last) < interval {
		s.suppressed++
		return
	}
	more := ""
	if s.suppressed > 0 {
		more = fmt.Sprintf(" (and %d more at this site since the last report)", s.suppressed)
	}
	s.last, s.suppressed = t, 0
	fmt.Fprintf(out, "%s panicked: %v%s; recovered, the library goes on (give it a logger to log panics instead)\n%s\n",
		where, v, more, stack)
}

// SetForTest makes Report write to w and read the time from clock, and
// forgets the sites seen; the returned function puts things back. For the
// library's tests.
func SetForTest(w io.Writer, clock func() time.Time) (restore func()) {
	mu.Lock()
	defer mu.Unlock()
	oldOut, oldNow, oldSites := out, now, sites
	out, now, sites = w, clock, map[string]*site{}
	return func() {
		mu.Lock()
		defer mu.Unlock()
		out, now, sites = oldOut, oldNow, oldSites
	}
}
