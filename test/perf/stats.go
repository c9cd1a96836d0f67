package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// cpuTime returns the process's user and system CPU time so far. It is the
// whole process, as Kafka's tool measures its JVM: generator, completion
// queue, purgatory, timer and garbage collector together.
func cpuTime() (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0 // cannot fail for RUSAGE_SELF; zero shows up in the report
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// gcSnapshot holds the garbage collector's counters at one moment.
type gcSnapshot struct {
	cycles uint32
	pause  time.Duration
}

// readGC stops the world briefly (ReadMemStats); it is called twice a run,
// outside the sampling loop, for the exact pause total MemStats keeps.
func readGC() gcSnapshot {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return gcSnapshot{cycles: m.NumGC, pause: time.Duration(m.PauseTotalNs)}
}

// resetPeakRSS resets the kernel's high-water mark of the resident set, so
// VmHWM measures this run and not the start-up (Linux only; elsewhere, or
// without permission, the mark covers the whole process life).
func resetPeakRSS() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSS returns VmHWM, the peak resident set size, in bytes.
func peakRSS() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("peak RSS: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmHWM:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest) // "1234", "kB"
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, fmt.Errorf("peak RSS: unexpected VmHWM line %q", sc.Text())
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("peak RSS: %w", err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("peak RSS: no VmHWM in /proc/self/status")
}

// heapSampler keeps the largest heap in use seen while it runs: the heap's
// spans holding objects, and the free space inside them (MemStats.HeapInuse).
// runtime/metrics reads it without stopping the world, so sampling every
// 100ms costs next to nothing; a peak shorter than that may be missed.
type heapSampler struct {
	samples []metrics.Sample
	stop    chan struct{}
	wg      sync.WaitGroup
	peak    uint64 // owned by the sampling goroutine until wg.Wait
}

const sampleEvery = 100 * time.Millisecond

func startHeapSampler() *heapSampler {
	s := &heapSampler{
		samples: []metrics.Sample{
			{Name: "/memory/classes/heap/objects:bytes"},
			{Name: "/memory/classes/heap/unused:bytes"},
		},
		stop: make(chan struct{}),
	}
	s.sample()
	s.wg.Go(func() {
		t := time.NewTicker(sampleEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				s.sample()
			case <-s.stop:
				s.sample()
				return
			}
		}
	})
	return s
}

func (s *heapSampler) sample() {
	metrics.Read(s.samples)
	var inUse uint64
	for _, m := range s.samples {
		if m.Value.Kind() == metrics.KindUint64 {
			inUse += m.Value.Uint64()
		}
	}
	s.peak = max(s.peak, inUse)
}

// finish takes a last sample, stops the goroutine and returns the peak in
// bytes.
func (s *heapSampler) finish() uint64 {
	close(s.stop)
	s.wg.Wait()
	return s.peak
}
