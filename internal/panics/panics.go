// Package panics reports the panics the library recovers: to the logger
// the user gave, or, when nobody gave one, to standard error, as net/http
// writes a handler's panic to the standard logger: a recovered panic is
// never silent. On standard error each place a panic can come from (a
// purgatory's OnComplete, a timer's task) is written at most once a
// minute, with its stack; the others in that minute are counted, and the
// next report says how many.
package panics

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"go.uber.org/zap"
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

// Report reports the panic v recovered at where (which names where it
// came from: "purgatory fetch: OnComplete") with its stack: to log at error
// level, with fields, or without a logger (log nil) to standard error (see
// write). It must run in the deferred function that recovered v, so that
// the stack is the panic's.
func Report(log *zap.Logger, where string, v any, fields ...zap.Field) {
	if log != nil {
		log.Error(where+" panicked; recovered, it goes on",
			append(fields, zap.Any("panic", v), zap.Stack("stack"))...)
		return
	}
	write(where, v, debug.Stack())
}

// write writes the panic v recovered at where with its stack to standard
// error, unless that place was written less than a minute ago, in which
// case it is counted for the next report. It never panics and never blocks
// for long: a write to standard error.
func write(where string, v any, stack []byte) {
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

// SetForTest makes Report (without a logger) write to w and read the time from clock, and
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
