package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopurgatory/purgatory/purgatory"
	"github.com/gopurgatory/purgatory/timer"
)

const (
	// hangGrace is how long after the last submission plus the timeout every
	// request must have been answered; past it the run reports a hang
	// instead of waiting forever.
	hangGrace = 60 * time.Second
	// purgeBound bounds the wait for the reaper to empty the watcher lists
	// after the last answer: it wakes at least every 200ms and, once
	// nothing waits, purges whatever is completed, so five rounds is ample.
	purgeBound = time.Second
	// progressAfter is the expected length of a run above which progress
	// lines are printed.
	progressAfter = 2 * time.Second
)

// run submits cfg.num requests to a fresh purgatory, waits until every one has
// been answered, and measures the process meanwhile. Progress lines go to
// progress when it is not nil and the run is expected to last over
// progressAfter. Everything run starts is stopped before it returns.
func run(ctx context.Context, cfg config, progress io.Writer) (result, error) {
	if err := cfg.validate(); err != nil {
		return result{}, err
	}
	clk := timer.NewRealClock()
	rec := newRecorder(clk, cfg.num)

	// The completion queue, Kafka's DelayQueue thread: a timing wheel of
	// this repository with no workers, so its one driving goroutine both
	// waits for the earliest completion time and calls ForceComplete. It is
	// part of the measured process, as Kafka's thread is.
	queue, err := timer.New(timer.WithClock(clk), timer.WithWorkers(0))
	if err != nil {
		return result{}, fmt.Errorf("completion queue: %w", err)
	}
	defer queue.Close() // idempotent: the normal path closes it earlier
	p, err := purgatory.New[string]("perf")
	if err != nil {
		return result{}, fmt.Errorf("purgatory: %w", err)
	}
	defer p.Close() // idempotent; on an error path it answers what is pending
	gen := newGenerator(cfg, clk, p, queue, rec)

	// Start from a collected heap so that the set-up's garbage is not
	// charged to the run.
	runtime.GC()
	resetPeakRSS()
	gc0 := readGC()
	user0, sys0 := cpuTime()
	stopProfile, err := startCPUProfile(cfg.cpuProf)
	if err != nil {
		return result{}, err
	}
	defer stopProfile() // idempotent: the normal path stops it with the measurement
	heap := startHeapSampler()
	heapStopped := false
	defer func() {
		if !heapStopped {
			heap.finish()
		}
	}()

	var submitEnd atomic.Int64 // set when the generator is done, for progress
	start := clk.Now()
	if progress != nil && time.Duration(float64(cfg.num)/cfg.rate*float64(time.Second))+gen.timeout > progressAfter {
		stop := startProgress(progress, func() string {
			now := clk.Now()
			el := now - start
			if e := submitEnd.Load(); e != 0 {
				el = time.Duration(e) - start // the rate over the submission, as the final figure
			}
			u, s := cpuTime()
			return fmt.Sprintf("%6.1fs  submitted %d (%.0f/s)  pending %d  cpu %.1fs",
				(now - start).Seconds(), gen.submitted.Load(), float64(gen.submitted.Load())/el.Seconds(),
				p.Pending(), (u + s - user0 - sys0).Seconds())
		})
		defer stop()
	}

	if err := gen.run(ctx, start); err != nil {
		return result{}, err
	}
	lastSubmit := clk.Now()
	submitEnd.Store(int64(lastSubmit))

	// Kafka's latch: every request answered.
	select {
	case <-rec.allDone:
	case <-ctx.Done():
		return result{}, fmt.Errorf("waiting for completions: %w", ctx.Err())
	case <-time.After(gen.timeout + hangGrace):
		return result{}, fmt.Errorf("hang: %d of %d requests not answered %v after the last submission (Pending()=%d, Watched()=%d, completion queue %d)",
			rec.remaining.Load(), cfg.num, gen.timeout+hangGrace, p.Pending(), p.Watched(), queue.Size())
	}
	end := clk.Now()
	user1, sys1 := cpuTime()
	stopProfile()
	gc1 := readGC()
	heapPeak := heap.finish()
	heapStopped = true
	rss, rssErr := peakRSS()

	res := result{
		configFields: newConfigFields(cfg),
		GoMaxProcs:   runtime.GOMAXPROCS(0),
		AchievedRate: float64(cfg.num) / max(lastSubmit-start, time.Nanosecond).Seconds(),
		SubmitMS:     ms(lastSubmit - start),
		WallMS:       ms(end - start),
		CPUUserMS:    ms(user1 - user0),
		CPUSysMS:     ms(sys1 - sys0),
		CPUMS:        ms(user1 - user0 + sys1 - sys0),
		GCCycles:     gc1.cycles - gc0.cycles,
		GCPauseMS:    ms(gc1.pause - gc0.pause),
		PeakHeapMiB:  mib(int64(heapPeak)),
		PeakRSSMiB:   mib(rss),
		Latency:      rec.latency.summary(),
		ModelLatency: gen.model.summary(),
		SubmitLag:    gen.lag.summary(),
		WatchedAtEnd: p.Watched(),
		DelayedAtEnd: p.Delayed(),
	}
	if rssErr != nil {
		res.PeakRSSMiB = -1 // not Linux: say so rather than print a zero
	}
	res.AchievedRatio = res.AchievedRate / cfg.rate

	// Completed operations stay on their other keys' lists until the reaper
	// purges them; wait for it, outside the measured time, to check that
	// the lists do empty. Then purge by hand, which must leave nothing: what
	// the reaper left is completed garbage it lost count of, not live work.
	purgeStart := clk.Now()
	res.WatchedAfterReaper = waitForPurge(ctx, p)
	res.ReaperPurgeMS = ms(clk.Now() - purgeStart)
	res.PurgedByHand = p.Purge()
	res.WatchedAfterPurge = p.Watched()

	// Entries left in the queue belong to requests answered otherwise (at
	// submission, or expired first); they would only find them completed.
	res.QueueLeft = len(queue.Close())
	if err := p.Close(); err != nil {
		return result{}, fmt.Errorf("closing the purgatory: %w", err)
	}
	// After Close, so that anything it answered (as Closed) is counted too.
	res.setOutcomes(rec)
	return res, nil
}

// startCPUProfile starts a CPU profile to path (none when it is empty) and
// returns what stops it and closes the file, which may be called twice.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			f.Close()
		})
	}, nil
}

// waitForPurge polls until the purgatory's watcher lists are empty or
// purgeBound passes, and returns what is still listed.
func waitForPurge(ctx context.Context, p *purgatory.Purgatory[string]) int {
	deadline := time.Now().Add(purgeBound)
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		n := p.Watched()
		if n == 0 || time.Now().After(deadline) {
			return n
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return n
		}
	}
}

// startProgress prints line() to w every second until stop is called; stop
// returns once the goroutine has exited.
func startProgress(w io.Writer, line func() string) (stop func()) {
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				fmt.Fprintln(w, "progress:", line())
			case <-quit:
				return
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() { close(quit) })
		wg.Wait()
	}
}
