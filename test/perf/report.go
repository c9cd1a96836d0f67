package main

import (
	"fmt"
	"io"
	"runtime"
	"text/tabwriter"

	"github.com/gopurgatory/purgatory/operation"
)

// configFields is the settings part of a result, so that a JSON result says
// what produced it.
type configFields struct {
	TargetRate   float64 `json:"target_rate"`
	Num          int     `json:"num"`
	Keys         int     `json:"keys"`
	KeySpaceSize int     `json:"key_space_size"`
	SizeBytes    int     `json:"size_bytes"`
	TimeoutMS    int     `json:"timeout_ms"`
	Pct50MS      float64 `json:"pct50_ms"`
	Pct75MS      float64 `json:"pct75_ms"`
	Seed         uint64  `json:"seed"`
	Threads      int     `json:"threads"`
}

func newConfigFields(c config) configFields {
	return configFields{
		TargetRate: c.rate, Num: c.num, Keys: c.keys, KeySpaceSize: c.keySpaceSize,
		SizeBytes: c.size, TimeoutMS: c.timeoutMS, Pct50MS: c.pct50, Pct75MS: c.pct75, Seed: c.seed,
		Threads: c.threads,
	}
}

// result is every figure of one run. The JSON names are stable (a sweep's
// parent reads them back) and carry their unit; the settings are embedded, so
// their fields sit in the same JSON object.
type result struct {
	configFields
	GoMaxProcs int `json:"gomaxprocs"`

	AchievedRate  float64 `json:"achieved_rate"`  // requests / SubmitMS
	AchievedRatio float64 `json:"achieved_ratio"` // achieved / target
	SubmitMS      float64 `json:"submit_ms"`      // start to the last submission
	WallMS        float64 `json:"wall_ms"`        // start to the last answer
	CPUMS         float64 `json:"cpu_ms"`         // user + sys, whole process
	CPUUserMS     float64 `json:"cpu_user_ms"`
	CPUSysMS      float64 `json:"cpu_sys_ms"`
	GCCycles      uint32  `json:"gc_cycles"`
	GCPauseMS     float64 `json:"gc_pause_ms"`
	PeakHeapMiB   float64 `json:"peak_heap_mib"` // heap in use, sampled every 100ms
	PeakRSSMiB    float64 `json:"peak_rss_mib"`  // VmHWM; -1 when unknown

	Latency      percentiles `json:"latency"`       // arrival to OnComplete
	ModelLatency percentiles `json:"model_latency"` // drawn latencies, capped at the timeout
	SubmitLag    percentiles `json:"submit_lag"`    // due arrival to actual submission

	CompletedEarly     int64 `json:"completed_early"`  // by_try + forced
	CompletedByTry     int64 `json:"completed_by_try"` // at submission, the generator being late
	Forced             int64 `json:"forced"`           // by the completion queue
	Expired            int64 `json:"expired"`
	Closed             int64 `json:"closed"` // answered by Close: should be 0
	OnCompleteCalls    int64 `json:"on_complete_calls"`
	DuplicateCompletes int64 `json:"duplicate_completions"` // should be 0
	OnExpirationCalls  int64 `json:"on_expiration_calls"`   // should equal expired

	WatchedAtEnd       int     `json:"watched_at_end"` // at the last answer, before the reaper purged
	DelayedAtEnd       int     `json:"delayed_at_end"`
	WatchedAfterReaper int     `json:"watched_after_reaper"`  // once the reaper purged, or after purgeBound
	ReaperPurgeMS      float64 `json:"reaper_purge_ms"`       // how long that took
	PurgedByHand       int     `json:"purged_by_hand"`        // what Purge() then dropped: should be 0
	WatchedAfterPurge  int     `json:"watched_after_purge"`   // after Purge(): must be 0
	QueueLeft          int     `json:"completion_queue_left"` // entries of requests answered otherwise
}

func (r *result) setOutcomes(rec *recorder) {
	r.CompletedByTry = rec.outcome(operation.Completed)
	r.Forced = rec.outcome(operation.Forced)
	r.CompletedEarly = r.CompletedByTry + r.Forced
	r.Expired = rec.outcome(operation.Expired)
	r.Closed = rec.outcome(operation.Closed) + rec.outcome(operation.Cancelled)
	r.OnCompleteCalls = rec.calls.Load()
	r.DuplicateCompletes = rec.duplicates.Load()
	r.OnExpirationCalls = rec.expirations.Load()
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// writeText prints a result for a reader.
func writeText(w io.Writer, r result) error {
	c := r.configFields
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	p("purgatory performance: %d requests, %d keys each of %d, timeout %d ms, model p50 %g ms p75 %g ms, payload %d B, %d submitting goroutine(s), GOMAXPROCS %d, %s\n",
		c.Num, c.Keys, c.KeySpaceSize, c.TimeoutMS, c.Pct50MS, c.Pct75MS, c.SizeBytes, max(c.Threads, 1), r.GoMaxProcs, runtime.Version())
	p("rate\ttarget %.0f/s\tachieved %.0f/s\t(%.3f of target, %.2f s to submit)\n", c.TargetRate, r.AchievedRate, r.AchievedRatio, r.SubmitMS/1000)
	p("time\twall %.2f s\tcpu %.2f s\t(user %.2f s, sys %.2f s: %.0f%% of one core)\n",
		r.WallMS/1000, r.CPUMS/1000, r.CPUUserMS/1000, r.CPUSysMS/1000, 100*r.CPUMS/r.WallMS)
	p("gc\t%d cycles\tpause %.2f ms total\t\n", r.GCCycles, r.GCPauseMS)
	p("memory\tpeak heap %.1f MiB\tpeak RSS %s\t\n", r.PeakHeapMiB, rssText(r.PeakRSSMiB))
	p("outcomes\tearly %d\texpired %d\t(early: %d forced by the completion queue, %d at submission; closed %d)\n",
		r.CompletedEarly, r.Expired, r.Forced, r.CompletedByTry, r.Closed)
	p("callbacks\tOnComplete %d\tduplicates %d\tOnExpiration %d\n", r.OnCompleteCalls, r.DuplicateCompletes, r.OnExpirationCalls)
	p("purgatory\twatched %d\tdelayed %d\tat the last answer; watched %d after the reaper (%.0f ms), %d after Purge()\n",
		r.WatchedAtEnd, r.DelayedAtEnd, r.WatchedAfterReaper, r.ReaperPurgeMS, r.WatchedAfterPurge)
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.PurgedByHand > 0 {
		// The library promises that the lists empty when a load ends.
		fmt.Fprintf(w, "warning: the reaper left %d completed watch entries listed %.0f ms after the last answer; Purge() dropped them\n",
			r.PurgedByHand, r.ReaperPurgeMS)
	}
	if r.DuplicateCompletes > 0 || r.Closed > 0 || r.OnExpirationCalls != r.Expired {
		fmt.Fprintf(w, "warning: exactly-once broken: %d duplicate OnComplete calls, %d answered only by Close, %d OnExpiration calls for %d expired\n",
			r.DuplicateCompletes, r.Closed, r.OnExpirationCalls, r.Expired)
	}

	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "latency (ms)\tp50\tp75\tp99\tp99.9\tmax\t\n")
	row := func(name string, q percentiles) {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t\n", name, q.P50MS, q.P75MS, q.P99MS, q.P999MS, q.MaxMS)
	}
	row("measured", r.Latency)
	row("model", r.ModelLatency)
	row("submit lag", r.SubmitLag)
	return tw.Flush()
}

func rssText(m float64) string {
	if m < 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.1f MiB", m)
}
