package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopurgatory/purgatory/purgatory"
	"github.com/gopurgatory/purgatory/timer"
)

// generator is the load: Kafka's RequestGenerator. It draws every request's
// arrival, keys and latency, submits it, and hands the ones that complete
// before their timeout to the completion queue. With --threads it submits
// from several goroutines, as a broker submits from many connections, each
// a Poisson process at rate/threads (together, a Poisson process at rate).
type generator struct {
	cfg       config
	timeout   time.Duration
	latencies logNormal
	names     []string // the key space, built once

	clk   *timer.RealClock
	p     *purgatory.Purgatory[string]
	queue *timer.Timer // the completion queue
	rec   *recorder

	model     histogram    // drawn latencies, capped at the timeout; the sources' merged
	lag       histogram    // due arrival to submission; the sources' merged
	submitted atomic.Int64 // read by the progress line
}

// source is one submitting goroutine's own draws, and its own histograms
// (merged into the generator's when it is done): threads sharing one
// would meet on its counters, and the harness would measure itself.
type source struct {
	rng      *rand.Rand
	arrivals poisson
	keys     *keyPicker
	num      int // requests it submits

	model, lag *histogram
}

func newGenerator(cfg config, clk *timer.RealClock, p *purgatory.Purgatory[string], queue *timer.Timer, rec *recorder) *generator {
	names := make([]string, cfg.keySpaceSize)
	for i := range names {
		names[i] = fmt.Sprintf("fakeKey%d", i)
	}
	return &generator{
		cfg:       cfg,
		timeout:   time.Duration(cfg.timeoutMS) * time.Millisecond,
		latencies: newLogNormal(cfg.pct50, cfg.pct75),
		names:     names,
		clk:       clk,
		p:         p,
		queue:     queue,
		rec:       rec,
	}
}

// sources splits the load over cfg.threads sources. One thread draws
// exactly what the single-threaded generator always drew for a seed.
func (g *generator) sources() []*source {
	n := g.cfg.threads
	srcs := make([]*source, n)
	for i := range srcs {
		seed := g.cfg.seed + uint64(i)*0x9e3779b97f4a7c15
		srcs[i] = &source{
			rng:      rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
			arrivals: poisson{rate: g.cfg.rate / float64(n)},
			keys:     newKeyPicker(g.names, g.cfg.keys),
			num:      g.cfg.num / n,
			model:    &g.model,
			lag:      &g.lag,
		}
		if n > 1 {
			srcs[i].model, srcs[i].lag = new(histogram), new(histogram)
		}
		if i < g.cfg.num%n {
			srcs[i].num++
		}
	}
	return srcs
}

// run submits every request, open loop, from each source at once, and
// returns when all have been submitted (or the first error).
func (g *generator) run(ctx context.Context, start time.Duration) error {
	srcs := g.sources()
	if len(srcs) == 1 {
		return g.runSource(ctx, start, srcs[0])
	}
	errs := make([]error, len(srcs))
	var wg sync.WaitGroup
	for i, src := range srcs {
		wg.Go(func() { errs[i] = g.runSource(ctx, start, src) })
	}
	wg.Wait()
	for _, src := range srcs {
		g.model.merge(src.model)
		g.lag.merge(src.lag)
	}
	return errors.Join(errs...)
}

// runSource submits src's requests, open loop: arrival i is due at start
// plus the sum of i gaps, whatever the submissions before it cost. When it
// is behind it submits at once, and the achieved rate shows it. A
// request's arrival is its due time, so its latency includes how late it
// was submitted (reported apart as the submit lag) and no queueing is
// hidden.
func (g *generator) runSource(ctx context.Context, start time.Duration, src *source) error {
	var next time.Duration
	for i := range src.num {
		next += src.arrivals.gap(src.rng)
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
		src.lag.record(now - arrival)
		if err := g.submit(src, arrival); err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
		g.submitted.Add(1)
	}
	return nil
}

// submit draws one request's latency and keys and submits it.
func (g *generator) submit(src *source, arrival time.Duration) error {
	lat := msToDuration(g.latencies.sample(src.rng))
	early := lat < g.timeout
	src.model.record(min(lat, g.timeout))
	op := &fakeOp{rec: g.rec, arrival: arrival, completesAt: arrival + lat}
	if !early {
		op.completesAt = 1<<63 - 1 // only the purgatory's deadline answers it
	}
	if g.cfg.size > 0 {
		op.payload = makePayload(g.cfg.size)
	}
	done, err := g.p.TryCompleteElseWatch(op, g.timeout, src.keys.pick(src.rng)...)
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
