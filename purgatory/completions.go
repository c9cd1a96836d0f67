package purgatory

import (
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/internal/lifecycle"
	"github.com/gopurgatory/purgatory/internal/panics"
)

// completions is the part of a purgatory its operations report to when they
// complete (lifecycle.Observer). It is not generic, so that the call from
// every completion goes straight to it rather than through a generic
// method's dictionary, and it keeps Completed and Panicked off the
// purgatory's method set.
type completions struct {
	ownTimer  bool                   // immutable, as everything up to delayed
	retention *retention             // nil in eager mode (purge interval 0)
	release   func(*lifecycle.State) // eager mode: drops a finished operation's entries
	m         *metrics               // nil without a Registerer
	log       *zap.Logger            // nil without a logger given
	name      string                 // the purgatory's, for reporting panics

	// delayed counts the operations on a shared timer and not completed;
	// with its own timer the purgatory asks the timer instead (Kafka's
	// numDelayed is the timer's size too), which spares two atomic updates
	// per operation.
	delayed atomic.Int64

	tally tally // what completions record: for Pending, retention and purges
}

// Completed keeps the counts and metrics, and accounts for (or, in eager
// mode, drops) the watch entries the operation left behind.
func (o *completions) Completed(s *lifecycle.State, out lifecycle.Outcome, listed int, late time.Duration) {
	counted := lifecycle.Counted(s)
	if r := o.retention; r != nil {
		if counted || listed > 0 {
			before, after := o.tally.record(s, counted, listed, r.collecting.Load(), r.maxDone())
			if steps := r.crossed(before, after); steps > 0 {
				r.check(steps)
			}
		}
	} else if counted {
		// Eager mode. An operation completed by its first try was never
		// listed: nothing to release.
		o.tally.record(s, true, 0, false, 0)
		o.release(s)
	}
	if !o.ownTimer && lifecycle.WasScheduled(s) {
		o.delayed.Add(-1)
	}
	if m := o.m; m != nil {
		m.completions[out].Inc()
		if out == lifecycle.Expired {
			m.lateness.Observe(late.Seconds())
		}
	}
}

// Panicked counts the panic and reports it: to the purgatory's logger, or
// without one to standard error (package panics). It runs in the deferred
// function that recovered it, so the stack is the panic's.
func (o *completions) Panicked(_ *lifecycle.State, callback string, v any) {
	if o.m != nil {
		o.m.panics.Inc()
	}
	panics.Report(o.log, "purgatory "+o.name+": "+callback, v, zap.String("callback", callback))
}
