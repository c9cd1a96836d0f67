package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/gopurgatory/purgatory/purgatory"
	"github.com/gopurgatory/purgatory/timer"
)

// generator is the load: Kafka's RequestGenerator. It draws every request's
// arrival, keys and latency, submits it, and hands the ones that complete
// before their timeout to the completion queue.
type generator struct {
	cfg       config
	timeout   time.Duration
	rng       *rand.Rand
	latencies logNormal
	arrivals  poisson
	keys      *keyPicker

	clk   *timer.RealClock
	p     *purgatory.Purgatory[string]
	queue *timer.Timer // the completion queue
	rec   *recorder

	model     histogram    // drawn latencies, capped at the timeout
	lag       histogram    // due arrival to submission
	submitted atomic.Int64 // read by the progress line
}

func newGenerator(cfg config, clk *timer.RealClock, p *purgatory.Purgatory[string], queue *timer.Timer, rec *recorder) *generator {
	names := make([]string, cfg.keySpaceSize)
	for i := range names {
		names[i] = fmt.Sprintf("fakeKey%d", i)
	}
	return &generator{
		cfg:       cfg,
		timeout:   time.Duration(cfg.timeoutMS) * time.Millisecond,
		rng:       rand.New(rand.NewPCG(cfg.seed, cfg.seed^0x9e3779b97f4a7c15)),
		latencies: newLogNormal(cfg.pct50, cfg.pct75),
		arrivals:  poisson{rate: cfg.rate},
		keys:      newKeyPicker(names, cfg.keys),
		clk:       clk,
		p:         p,
		queue:     queue,
		rec:       rec,
	}
}

// run submits every request, open loop: arrival i is due at start plus the
// sum of i gaps, whatever the submissions before it cost. When it is behind it
// submits at once, and the achieved rate shows it. A request's arrival is its
// due time, so its latency includes how late it was submitted (reported apart
// as the submit lag) and no queueing is hidden.
func (g *generator) run(ctx context.Context, start time.Duration) error {
	var next time.Duration
	for i := range g.cfg.num {
		next += g.arrivals.gap(g.rng)
		arrival := start + next
		now := g.clk.Now()
		if wait := arrival - now; wait > 0 {
			if ctx.Err() != nil {
				return fmt.Errorf("after %d requests: %w", i, ctx.Err())
			}
			// Below a millisecond the sleep is coarse and overshoots; the
			// requests that fell due meanwhile then go out back to back.
			time.Sleep(wait)
			now = g.clk.Now()
		} else if i%1024 == 0 && ctx.Err() != nil {
			return fmt.Errorf("after %d requests: %w", i, ctx.Err())
		}
		g.lag.record(now - arrival)
		if err := g.submit(arrival); err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
		g.submitted.Add(1)
	}
	return nil
}

// submit draws one request's latency and keys and submits it.
func (g *generator) submit(arrival time.Duration) error {
	lat := msToDuration(g.latencies.sample(g.rng))
	early := lat < g.timeout
	g.model.record(min(lat, g.timeout))
	op := &fakeOp{rec: g.rec, arrival: arrival, completesAt: arrival + lat}
	if !early {
		op.completesAt = 1<<63 - 1 // only the purgatory's deadline answers it
	}
	if g.cfg.size > 0 {
		op.payload = makePayload(g.cfg.size)
	}
	done, err := g.p.TryCompleteElseWatch(op, g.timeout, g.keys.pick(g.rng)...)
	if err != nil {
		return err
	}
	if !done && early {
		// Only after the submission returned: ForceComplete does nothing on
		// an operation still being submitted.
		op.done.Init((*completer)(op))
		if err := g.queue.ScheduleAt(&op.done, arrival+lat); err != nil {
			return fmt.Errorf("completion queue: %w", err)
		}
	}
	return nil
}

// makePayload allocates a request's payload and touches each page of it, so
// that a large payload is resident as received data would be; fresh pages
// from the OS are not, however much the heap counts them.
func makePayload(n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; i += 4096 {
		b[i] = 1
	}
	return b
}
