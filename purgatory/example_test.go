package purgatory_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/purgatory"
	"github.com/gopurgatory/purgatory/timer"
)

func ExampleFuturePurgatory() {
	clk := timer.NewManualClock(0)
	fp, _ := purgatory.NewFuturePurgatory[string]("futures", purgatory.WithClock(clk))
	defer fp.Close()

	replicas := []*purgatory.Future[string]{purgatory.NewFuture[string](), purgatory.NewFuture[string]()}
	_, _ = fp.Await(replicas, time.Second, func(fs []*purgatory.Future[string]) {
		for _, f := range fs {
			v, err := f.Result()
			fmt.Printf("%q %v\n", v, err)
		}
	})
	replicas[0].Complete("broker-2 acked", nil)
	clk.Advance(time.Second) // broker-3 never answers
	// Output:
	// "broker-2 acked" <nil>
	// "" purgatory: timed out
}

func ExamplePurgatory_CancelForKey() {
	clk := timer.NewManualClock(0)
	p, _ := purgatory.New[string]("produce", purgatory.WithClock(clk))
	defer p.Close()

	op := operation.NewFunc(nil, nil, nil)
	op.Complete = func() { fmt.Println("answered:", op.Outcome()) }
	_, _ = p.TryCompleteElseWatch(op, time.Minute, "deleted-topic-0")

	// The partition is deleted: its operations are handed back to answer.
	for _, op := range p.CancelForKey("deleted-topic-0") {
		op.OperationState().ForceComplete()
	}
	// Output:
	// answered: cancelled
}

// A request's context ties its operation to the client: when the client
// goes away, the operation completes at once with outcome ContextDone
// instead of holding its place until its deadline. In an HTTP handler
// the context is r.Context(), which net/http cancels when the client
// disconnects.
func ExamplePurgatory_TryCompleteElseWatchContext() {
	clk := timer.NewManualClock(0)
	p, _ := purgatory.New[string]("fetch", purgatory.WithClock(clk))
	defer p.Close()

	req, disconnect := context.WithCancel(context.Background())
	op := operation.NewFunc(nil, nil, nil)
	op.Complete = func() { fmt.Println("answered at", clk.Now(), "with", op.Outcome()) }
	_, _ = p.TryCompleteElseWatchContext(req, op, time.Minute, "orders-0")

	clk.Advance(10 * time.Second)
	disconnect()                      // the client went away, 50s before the deadline
	_ = op.Wait(context.Background()) // the handler wakes: there is no one to answer
	fmt.Println("deadlines on the timer:", p.Delayed())
	// Output:
	// answered at 10s with context_done
	// deadlines on the timer: 0
}

// Close answers what waits; afterwards, a submission is refused with
// ErrClosed and the operation is left to its caller, untouched.
func ExamplePurgatory_Close() {
	p, _ := purgatory.New[string]("produce")
	waiting := operation.NewFunc(nil, nil, nil)
	waiting.Complete = func() { fmt.Println("answered:", waiting.Outcome()) }
	_, _ = p.TryCompleteElseWatch(waiting, time.Minute, "orders-0")

	_ = p.Close()
	late := operation.NewFunc(nil, func() { fmt.Println("never printed") }, nil)
	_, err := p.TryCompleteElseWatch(late, time.Minute, "orders-0")
	if errors.Is(err, purgatory.ErrClosed) {
		fmt.Println("refused, untouched:", late.Outcome())
	}
	// Output:
	// answered: closed
	// refused, untouched: pending
}

// Purgatories can share one timer, and with it one set of goroutines: its
// owner drives and closes it.
func ExampleWithTimer() {
	clk := timer.NewManualClock(0)
	tm, _ := timer.New(timer.WithClock(clk))
	defer tm.Close()
	fetches, _ := purgatory.New[string]("fetch", purgatory.WithTimer(tm))
	defer fetches.Close()
	produces, _ := purgatory.New[string]("produce", purgatory.WithTimer(tm))
	defer produces.Close()

	expire := func(name string) *operation.Func {
		return operation.NewFunc(nil, nil, func() { fmt.Println(name, "expired at", clk.Now()) })
	}
	_, _ = fetches.TryCompleteElseWatch(expire("fetch"), 500*time.Millisecond, "orders-0")
	_, _ = produces.TryCompleteElseWatch(expire("produce"), time.Second, "orders-0")
	fmt.Println("on the timer:", tm.Size(), "fetches:", fetches.Delayed(), "produces:", produces.Delayed())
	clk.Advance(time.Second)
	// Output:
	// on the timer: 2 fetches: 1 produces: 1
	// fetch expired at 500ms
	// produce expired at 1s
}

// The timer's cap bounds how many operations can wait; past it, an
// operation is answered at once with outcome Rejected (no error: it was
// taken, and answered), so that the caller can shed load.
func ExampleWithTimerOptions() {
	p, _ := purgatory.New[string]("fetch", purgatory.WithTimerOptions(timer.WithMaxPending(1)))
	defer p.Close()

	answer := func(op *operation.Func) func() { return func() { fmt.Println("answered:", op.Outcome()) } }
	first, second := operation.NewFunc(nil, nil, nil), operation.NewFunc(nil, nil, nil)
	first.Complete, second.Complete = answer(first), answer(second)
	_, _ = p.TryCompleteElseWatch(first, time.Minute, "orders-0")
	done, err := p.TryCompleteElseWatch(second, time.Minute, "orders-0")
	fmt.Println("done:", done, "error:", err)
	// Output:
	// answered: rejected
	// done: true error: <nil>
	// answered: closed
}

// Metrics go to the Registerer given, labelled with the purgatory's name;
// Close unregisters them.
func ExampleWithRegisterer() {
	reg := prometheus.NewRegistry()
	p, _ := purgatory.New[string]("fetch", purgatory.WithRegisterer(reg))
	_, _ = p.TryCompleteElseWatch(operation.NewFunc(nil, nil, nil), time.Minute, "orders-0")

	families, _ := reg.Gather()
	for _, f := range families {
		if strings.HasSuffix(f.GetName(), "_pending") || strings.HasSuffix(f.GetName(), "_watch_entries") {
			fmt.Println(f.GetName(), f.GetMetric()[0].GetGauge().GetValue())
		}
	}
	_ = p.Close()
	families, _ = reg.Gather()
	fmt.Println("after Close:", len(families), "families")
	// Output:
	// purgatory_operations_pending 1
	// purgatory_watch_entries 1
	// after Close: 0 families
}
