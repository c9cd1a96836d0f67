package txn

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/coordinator"
	"github.com/gopurgatory/purgatory/timer"
)

const (
	testEpoch   = 5                // the leader epoch the fake log's partitions are loaded at
	testTimeout = 10 * time.Second // the transactions' timeout in these tests
)

// wallStart is the wall clock the tests' coordinators start at.
var wallStart = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// fakeLog is a Log of n partitions, in memory: appends are kept per
// partition and, unless held, durable at once.
type fakeLog struct {
	n int

	mu      sync.Mutex // guards the following
	loaded  map[int32]bool
	batches map[int32][][]byte
	refuse  error    // the next appends fail with it
	hold    bool     // appends wait until released
	held    []func() // the waits held, in order
	failAll error    // held waits end with it when released
}

func newFakeLog(n int) *fakeLog {
	return &fakeLog{n: n, loaded: make(map[int32]bool), batches: make(map[int32][][]byte)}
}

func (l *fakeLog) PartitionOf(txnID string) (int32, bool) {
	idx := coordinator.PartitionFor(txnID, l.n)
	l.mu.Lock()
	defer l.mu.Unlock()
	return idx, l.loaded[idx]
}

func (l *fakeLog) Append(txnID string, batch []byte, minISR bool) (func(done func(error)), error) {
	idx := coordinator.PartitionFor(txnID, l.n)
	l.mu.Lock()
	defer l.mu.Unlock()
	if !minISR {
		return nil, fmt.Errorf("the coordinator must append with minISR")
	}
	if l.refuse != nil {
		return nil, l.refuse
	}
	l.batches[idx] = append(l.batches[idx], batch)
	if !l.hold {
		return func(done func(error)) { done(nil) }, nil
	}
	return func(done func(error)) {
		l.mu.Lock()
		l.held = append(l.held, func() {
			l.mu.Lock()
			err := l.failAll
			l.mu.Unlock()
			done(err)
		})
		l.mu.Unlock()
	}, nil
}

func (l *fakeLog) setLoaded(idx int32, loaded bool) {
	l.mu.Lock()
	l.loaded[idx] = loaded
	l.mu.Unlock()
}

func (l *fakeLog) setRefuse(err error) {
	l.mu.Lock()
	l.refuse = err
	l.mu.Unlock()
}

// setHold makes the next appends' waits wait for release.
func (l *fakeLog) setHold(hold bool) {
	l.mu.Lock()
	l.hold = hold
	l.mu.Unlock()
}

// release ends the waits held so far, with err, and returns how many.
func (l *fakeLog) release(err error) int {
	l.mu.Lock()
	held := l.held
	l.held, l.failAll = nil, err
	l.mu.Unlock()
	for _, h := range held {
		h()
	}
	return len(held)
}

// appends returns how many batches partition idx holds.
func (l *fakeLog) appends(idx int32) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.batches[idx])
}

// replay replays partition idx's batches, as a new leader would.
func (l *fakeLog) replay(t *testing.T, idx int32) *Replay {
	t.Helper()
	l.mu.Lock()
	bs := append([][]byte(nil), l.batches[idx]...)
	l.mu.Unlock()
	r := &Replay{}
	for _, b := range bs {
		_, err := r.Apply(b)
		require.NoError(t, err)
	}
	return r
}

// last returns the metadata of txnID's latest record, nil for a tombstone
// or none.
func (l *fakeLog) last(t *testing.T, txnID string) *metadata {
	t.Helper()
	return l.replay(t, coordinator.PartitionFor(txnID, l.n)).Values()[txnID]
}

// states returns the states txnID's records say, in order ("tombstone"
// for one).
func (l *fakeLog) states(t *testing.T, txnID string) []string {
	t.Helper()
	idx := coordinator.PartitionFor(txnID, l.n)
	l.mu.Lock()
	bs := append([][]byte(nil), l.batches[idx]...)
	l.mu.Unlock()
	var out []string
	for _, raw := range bs {
		var b kmsg.RecordBatch
		require.NoError(t, b.ReadFrom(raw))
		rest := b.Records
		for range b.NumRecords {
			length, n := kbin.Varint(rest)
			var rec kmsg.Record
			require.NoError(t, rec.ReadFrom(rest[:n+int(length)]))
			rest = rest[n+int(length):]
			id, m, err := decode(rec)
			require.NoError(t, err)
			switch {
			case id != txnID:
			case m == nil:
				out = append(out, "tombstone")
			default:
				out = append(out, m.state.String())
			}
		}
	}
	return out
}

// markerCall is one WriteMarkers call.
type markerCall struct {
	m     Marker
	parts []TopicPartition
	done  func(map[TopicPartition]error)
}

// fakeMarkers is a MarkerWriter: with auto set, it answers each call at
// once with auto's result for each partition; otherwise it keeps the calls
// for the test to answer.
type fakeMarkers struct {
	mu    sync.Mutex // guards the following
	auto  func(TopicPartition) error
	calls []markerCall // every call, answered or not
	held  []markerCall // the calls not answered yet
}

func (w *fakeMarkers) WriteMarkers(m Marker, parts []TopicPartition, done func(map[TopicPartition]error)) {
	w.mu.Lock()
	call := markerCall{m: m, parts: parts, done: done}
	w.calls = append(w.calls, call)
	auto := w.auto
	if auto == nil {
		w.held = append(w.held, call)
	}
	w.mu.Unlock()
	if auto != nil {
		res := make(map[TopicPartition]error, len(parts))
		for _, tp := range parts {
			res[tp] = auto(tp)
		}
		done(res)
	}
}

func (w *fakeMarkers) setAuto(f func(TopicPartition) error) {
	w.mu.Lock()
	w.auto = f
	w.mu.Unlock()
}

// answer answers the calls held with f's result for each partition, and
// returns them.
func (w *fakeMarkers) answer(f func(TopicPartition) error) []markerCall {
	w.mu.Lock()
	held := w.held
	w.held = nil
	w.mu.Unlock()
	for _, call := range held {
		res := make(map[TopicPartition]error, len(call.parts))
		for _, tp := range call.parts {
			res[tp] = f(tp)
		}
		call.done(res)
	}
	return held
}

func (w *fakeMarkers) all() []markerCall {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]markerCall(nil), w.calls...)
}

func written(TopicPartition) error { return nil }

// env is a coordinator on a fake log and fake markers, on a manual clock.
type env struct {
	c       *Coordinator
	log     *fakeLog
	markers *fakeMarkers
	clk     *timer.ManualClock

	timeout time.Duration // the InitProducerIDs' (testTimeout)

	mu     sync.Mutex
	nextID int64
}

// newEnv returns a coordinator whose log has n partitions (1 if 0), all
// loaded at testEpoch, with markers written at once, closed at the end of
// the test.
func newEnv(t *testing.T, n int, tweak ...func(*Config)) *env {
	t.Helper()
	if n == 0 {
		n = 1
	}
	e := &env{log: newFakeLog(n), markers: &fakeMarkers{auto: written}, clk: timer.NewManualClock(0), nextID: 1000,
		timeout: testTimeout}
	cfg := Config{
		Markers: e.markers,
		NextProducerID: func() (int64, error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.nextID++
			return e.nextID, nil
		},
		OffsetsPartition: func(g string) int32 { return coordinator.PartitionFor(g, 50) },
		Clock:            e.clk,
		Wall:             func() time.Time { return wallStart },
	}
	for _, f := range tweak {
		f(&cfg)
	}
	var err error
	e.c, err = New(e.log, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.c.Close()) })
	for i := range n {
		e.log.setLoaded(int32(i), true)
		_, err := e.c.Load(int32(i), testEpoch, &Replay{})
		require.NoError(t, err)
	}
	return e
}

// answer records what a request was answered, to check it was answered
// exactly once.
type answer[T any] struct {
	mu  sync.Mutex
	got []T
}

func (a *answer[T]) respond(v T) {
	a.mu.Lock()
	a.got = append(a.got, v)
	a.mu.Unlock()
}

func (a *answer[T]) n() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.got)
}

// one returns the answer, failing unless there is exactly one.
func (a *answer[T]) one(t *testing.T) T {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	require.Len(t, a.got, 1, "answered exactly once")
	return a.got[0]
}

// initResult is an InitProducerID's answer.
type initResult struct {
	pid   int64
	epoch int16
	err   *kerr.Error
}

func (e *env) init(id string, pid int64, epoch int16) *answer[initResult] {
	a := new(answer[initResult])
	e.c.InitProducerID(id, e.timeout, pid, epoch, func(p int64, ep int16, err *kerr.Error) {
		a.respond(initResult{p, ep, err})
	})
	return a
}

func (e *env) add(id string, pid int64, epoch int16, parts ...TopicPartition) *answer[*kerr.Error] {
	a := new(answer[*kerr.Error])
	e.c.AddPartitions(id, pid, epoch, parts, a.respond)
	return a
}

func (e *env) end(id string, pid int64, epoch int16, commit bool) *answer[*kerr.Error] {
	a := new(answer[*kerr.Error])
	e.c.EndTxn(id, pid, epoch, commit, a.respond)
	return a
}

// initNow initializes id and returns its producer id and epoch, answered
// at once.
func (e *env) initNow(t *testing.T, id string) (int64, int16) {
	t.Helper()
	r := e.init(id, -1, -1).one(t)
	require.Nil(t, r.err, "InitProducerID")
	return r.pid, r.epoch
}

// ongoing initializes id and starts a transaction on parts, and returns
// the producer id and epoch.
func (e *env) ongoing(t *testing.T, id string, parts ...TopicPartition) (int64, int16) {
	t.Helper()
	pid, epoch := e.initNow(t, id)
	require.Nil(t, e.add(id, pid, epoch, parts...).one(t), "AddPartitions")
	return pid, epoch
}

// describe returns id's description.
func (e *env) describe(t *testing.T, id string) Description {
	t.Helper()
	return e.c.Describe([]string{id})[0]
}
