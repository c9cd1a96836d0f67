package txn

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/purgatory"
	"github.com/gopurgatory/purgatory/timer"
)

// Marker is the end of one producer's transaction, to be written to its
// partitions (Kafka's WriteTxnMarkers entry): the producer id and the epoch
// of the transaction's end (bumped when the coordinator aborted it to fence
// its producer), the coordinator epoch (the leader epoch of the
// __transaction_state partition the coordinator loaded the transaction
// at, by which a partition refuses a stale coordinator's markers), and
// whether it commits.
type Marker struct {
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	Commit           bool
}

// MarkerWriter writes markers: in the broker, locally through the replica
// manager with acks=all, or with a WriteTxnMarkers request to each
// partition's leader.
type MarkerWriter interface {
	// WriteMarkers appends m to each partition and calls done exactly
	// once, from any goroutine (before WriteMarkers returns too), with
	// each partition's result: nil when the marker is written and
	// replicated; an error wrapping ErrPartitionGone when the partition's
	// topic no longer exists (the coordinator drops that partition, as
	// Kafka does for a deleted topic); any other error is retriable (not
	// leader, not enough replicas, timeout, connection): the coordinator
	// writes those partitions' markers again after Config.RetryBackoff. A
	// partition missing from the map counts as retriable. WriteMarkers must
	// not block: the coordinator calls it from request handlers and timer
	// tasks, with no lock of its own held.
	WriteMarkers(m Marker, partitions []TopicPartition, done func(map[TopicPartition]error))
}

// Log is where a coordinator keeps its transactions: in the broker, the
// partitions of __transaction_state it leads, through the coordinator
// runtime (its *coordinator.Topic, which Host gives it); in tests, a fake.
type Log interface {
	// PartitionOf returns the partition txnID belongs in, and whether
	// this broker has loaded it (coordinator.Topic.PartitionOf). Lock-free:
	// the coordinator calls it under its own locks.
	PartitionOf(txnID string) (partition int32, loaded bool)
	// Append appends batch to txnID's partition and returns the wait for
	// its replication: a function that calls done exactly once, from any
	// goroutine, once the batch is durable (nil) or with why not (errors
	// wrapping a *kerr.Error: NOT_COORDINATOR, REQUEST_TIMED_OUT,
	// COORDINATOR_NOT_AVAILABLE). With minISR, a partition below its
	// min.insync.replicas refuses the batch. An error means nothing was
	// appended. The coordinator calls Append with the id's mutex held (so
	// that the log has each id's changes in the order they happened), and
	// the wait with no lock held (coordinator.Topic.Append).
	Append(txnID string, batch []byte, minISR bool) (wait func(done func(error)), err error)
}

// Kafka's defaults.
const (
	DefaultMaxTimeout   = 15 * time.Minute   // transaction.max.timeout.ms
	DefaultIDExpiration = 7 * 24 * time.Hour // transactional.id.expiration.ms
	DefaultRetryBackoff = 100 * time.Millisecond
	// expireRetry is how long an id whose tombstone could not be written
	// waits before it is tried again (Kafka's next sweep comes after
	// transaction.remove.expired.transaction.cleanup.interval.ms, an hour).
	expireRetry = time.Minute
	// soon is the least delay the coordinator schedules a timer task
	// with: a deadline already past runs on the timer's next tick, never
	// inside the call that arms it (with a lock of the caller's held).
	soon = time.Millisecond
)

// Config is what a Coordinator is made of. Markers, NextProducerID and
// OffsetsPartition are required; the rest have Kafka's defaults.
type Config struct {
	// Markers writes the markers that end transactions.
	Markers MarkerWriter
	// NextProducerID hands out a new producer id (the broker's
	// allocator); an error is answered COORDINATOR_NOT_AVAILABLE. It is
	// called with no lock of the coordinator's held.
	NextProducerID func() (int64, error)
	// OffsetsPartition returns the __consumer_offsets partition of a
	// group, which AddOffsets adds to the transaction.
	OffsetsPartition func(group string) int32
	// MaxTimeout is the longest transaction timeout a producer may ask
	// for (transaction.max.timeout.ms, default 15 minutes).
	MaxTimeout time.Duration
	// IDExpiration is how long a transactional id with no transaction
	// under way is kept after its last change (transactional.id.expiration.ms,
	// default 7 days): then its tombstone is written and it is forgotten.
	IDExpiration time.Duration
	// RetryBackoff is how long markers that failed with a retriable error,
	// and a completion that could not be written, wait before they are
	// tried again (default 100ms).
	RetryBackoff time.Duration
	// CompletionWait is how long an AddPartitions (or AddOffsets) that
	// finds the producer's previous transaction still completing (its
	// markers, or its completion, being written) waits for it, in the
	// TxnCompletion purgatory, before it is answered
	// CONCURRENT_TRANSACTIONS (completion.go). 0, Kafka's behaviour,
	// answers it at once.
	CompletionWait time.Duration
	// Registerer, if set, exports the TxnCompletion purgatory's metrics.
	Registerer prometheus.Registerer
	// Logger logs fences, timeouts, expirations and failed writes
	// (default: no-op).
	Logger *zap.Logger
	// Clock is the clock of the coordinator's timer, on which transaction
	// timeouts, id expirations and retries are timer tasks (default: the
	// system's monotonic clock). With a *timer.ManualClock they run inside
	// ManualClock.Advance, so tests are deterministic.
	Clock timer.Clock
	// Wall is the wall clock the records' timestamps come from (default:
	// time.Now). It is read once, by New: later times are Clock's,
	// counted from then.
	Wall func() time.Time
}

func (cfg *Config) validate() error {
	if cfg.MaxTimeout == 0 {
		cfg.MaxTimeout = DefaultMaxTimeout
	}
	if cfg.IDExpiration == 0 {
		cfg.IDExpiration = DefaultIDExpiration
	}
	if cfg.RetryBackoff == 0 {
		cfg.RetryBackoff = DefaultRetryBackoff
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Wall == nil {
		cfg.Wall = time.Now
	}
	switch {
	case cfg.Markers == nil:
		return fmt.Errorf("%w: no MarkerWriter", ErrInvalidConfig)
	case cfg.NextProducerID == nil:
		return fmt.Errorf("%w: no NextProducerID", ErrInvalidConfig)
	case cfg.OffsetsPartition == nil:
		return fmt.Errorf("%w: no OffsetsPartition", ErrInvalidConfig)
	case cfg.MaxTimeout < time.Millisecond || cfg.MaxTimeout > time.Duration(1<<31-1)*time.Millisecond:
		return fmt.Errorf("%w: max transaction timeout %v", ErrInvalidConfig, cfg.MaxTimeout)
	case cfg.IDExpiration < 0 || cfg.RetryBackoff < 0 || cfg.CompletionWait < 0:
		return fmt.Errorf("%w: negative id expiration %v or retry backoff %v", ErrInvalidConfig,
			cfg.IDExpiration, cfg.RetryBackoff)
	}
	return nil
}

// Coordinator is the transaction coordinator of one broker (Kafka's
// TransactionCoordinator with its TransactionStateManager): it holds the
// transactional ids of the __transaction_state partitions it has loaded
// (Load, Unload) and moves each through Kafka's states, writing every
// change to its partition before it takes effect. Its methods never block:
// an answer that waits for a write is given later, through the callback
// the request gave, from whichever goroutine ends the wait.
type Coordinator struct {
	cfg Config // immutable, as everything up to closed
	log Log
	zl  *zap.Logger
	clk timer.Clock
	tm  *timer.Timer // timeouts, expirations and retries
	// completions holds the requests waiting for a previous transaction
	// to complete, keyed by transactional id (completion.go).
	completions *purgatory.Purgatory[string]

	// wallOrigin is the wall-clock time when clk read clkOrigin: they
	// convert the clock's times to the records' timestamps.
	wallOrigin time.Time
	clkOrigin  time.Duration

	closed atomic.Bool

	mu    sync.Mutex // guards the following; a leaf, taken after a txn's mutex
	parts map[int32]*partition
	txns  map[string]*txn
}

// partition is a __transaction_state partition this coordinator has
// loaded. Immutable: a partition loaded again is a new one.
type partition struct {
	idx   int32
	epoch int32 // its leader epoch when loaded: the markers' coordinator epoch
}

// txn is one transactional id (Kafka's TransactionMetadata with its lock).
type txn struct {
	c    *Coordinator // immutable, as id and part
	id   string
	part *partition

	mu sync.Mutex // guards the following
	// deadline runs at the transaction's timeout while it is Ongoing, and
	// at the id's expiration while it is Empty or Complete; retry writes
	// the markers or the completion again after a failure (timers.go).
	deadline, retry *alarm
	// gone is set once the id is forgotten (its partition unloaded, the
	// id expired, the coordinator closed): whoever finds it set looks the
	// id up again, and what was under way for it ends without effect.
	gone bool
	meta metadata // what the log holds
	// pending is the transition being written (Kafka's pendingState, with
	// the metadata it leads to): requests meanwhile are
	// CONCURRENT_TRANSACTIONS. While the markers of a PrepareCommit or
	// PrepareAbort are written, it is the completion that follows them.
	pending *metadata
	// fenceFailed is set when the write of a fence's abort failed: the
	// epoch it bumped stays bumped (Kafka's hasFailedEpochFence), and the
	// next fence does not bump it again.
	fenceFailed bool
	// answer is the client waiting for the pending write, if any: whoever
	// takes it answers it, once (the write's end, Unload, Close).
	answer func(*kerr.Error)
	send   *sending // the markers being written, from a Prepare to its Complete
}

// New returns a coordinator keeping its transactions in log, with no
// partition loaded yet: Load brings them back. Host builds one on the
// coordinator runtime.
func New(log Log, cfg Config) (*Coordinator, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Coordinator{cfg: cfg, log: log, zl: cfg.Logger, clk: cfg.Clock,
		parts: make(map[int32]*partition), txns: make(map[string]*txn)}
	if c.clk == nil {
		c.clk = timer.NewRealClock()
	}
	c.wallOrigin, c.clkOrigin = cfg.Wall(), c.clk.Now()
	var err error
	if c.tm, err = timer.New(timer.WithClock(c.clk), timer.WithLogger(c.zl)); err != nil {
		return nil, fmt.Errorf("txn: %w", err)
	}
	popts := []purgatory.Option{purgatory.WithTimer(c.tm), purgatory.WithLogger(c.zl)}
	if cfg.Registerer != nil {
		popts = append(popts, purgatory.WithRegisterer(cfg.Registerer))
	}
	if c.completions, err = purgatory.New[string]("TxnCompletion", popts...); err != nil {
		c.tm.Close()
		return nil, fmt.Errorf("txn: %w", err)
	}
	return c, nil
}

// Close stops the coordinator:
//
//  1. refuse new requests (COORDINATOR_NOT_AVAILABLE, as Kafka answers a
//     coordinator that is not active);
//  2. forget every transactional id, answering the requests that wait for
//     a write NOT_COORDINATOR, as Unload does: markers under way end
//     without effect, and the next coordinator of the partition writes
//     them again once it loads it;
//  3. stop the timer: no timeout, expiration or retry runs after Close
//     returns.
//
// Close is idempotent and returns nil.
func (c *Coordinator) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	c.mu.Lock()
	ts := slices.Collect(maps.Values(c.txns))
	clear(c.txns)
	clear(c.parts)
	c.mu.Unlock()
	var a after
	for _, t := range ts {
		t.mu.Lock()
		t.forgetLocked(&a)
		t.mu.Unlock()
	}
	a.run()
	c.completions.Close() // the requests waiting: answered as the ids are gone
	c.tm.Close()
	c.zl.Debug("transaction coordinator closed", zap.Int("transactional_ids", len(ts)))
	return nil
}

// now returns the wall-clock time by the coordinator's clock.
func (c *Coordinator) now() time.Time { return c.wallOrigin.Add(c.clk.Now() - c.clkOrigin) }

// nowMs is now in the records' milliseconds.
func (c *Coordinator) nowMs() int64 { return c.now().UnixMilli() }

// Errors the coordinator answers itself.
var (
	errNotCoordinator = kerr.NotCoordinator
	errNotAvailable   = kerr.CoordinatorNotAvailable
	errConcurrent     = kerr.ConcurrentTransactions
	errFenced         = kerr.ProducerFenced
	errMapping        = kerr.InvalidProducerIDMapping
	errState          = kerr.InvalidTxnState
	// errAbortable is a verification's answer for a partition not in
	// the transaction (Kafka 3.8+, KAFKA-16314): the producer can abort
	// and go on, where INVALID_TXN_STATE is fatal to it. Partition
	// leaders map it back for their clients that predate it.
	errAbortable = kerr.TransactionAbortable
)

// lockTxn returns txnID locked and not gone, or nil with the error its
// absence is: nil when this broker coordinates the id but does not know
// it, NOT_COORDINATOR when it does not coordinate it (a request that
// raced a move), COORDINATOR_NOT_AVAILABLE once closed.
func (c *Coordinator) lockTxn(txnID string) (*txn, *kerr.Error) {
	for {
		if c.closed.Load() {
			return nil, errNotAvailable
		}
		c.mu.Lock()
		t := c.txns[txnID]
		if t == nil {
			err := c.ownsLocked(txnID)
			c.mu.Unlock()
			return nil, err
		}
		c.mu.Unlock()
		t.mu.Lock()
		if !t.gone {
			return t, nil
		}
		// Forgotten meanwhile (expired, unloaded): look again.
		t.mu.Unlock()
	}
}

// ownsLocked returns nil if this broker has loaded txnID's partition,
// else NOT_COORDINATOR.
//
// REQUIRES: c.mu held.
func (c *Coordinator) ownsLocked(txnID string) *kerr.Error {
	idx, ok := c.log.PartitionOf(txnID)
	if !ok || c.parts[idx] == nil {
		return errNotCoordinator
	}
	return nil
}

// create adds txnID, new, with producer id pid and the timeout asked for,
// and returns it locked; nil with NOT_COORDINATOR if its partition is not
// loaded here, nil and nil if it exists already (the caller looks again).
// Its metadata is Kafka's for an id just created: Empty, no epoch yet,
// until its first InitProducerID is written.
func (c *Coordinator) create(txnID string, pid int64, timeoutMs int32) (*txn, *kerr.Error) {
	if c.closed.Load() {
		return nil, errNotAvailable
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.txns[txnID] != nil {
		return nil, nil
	}
	// Checked under c.mu, which Unload takes after the runtime made the
	// partition unowned: no id outlives its partition's unloading.
	idx, ok := c.log.PartitionOf(txnID)
	p := c.parts[idx]
	if !ok || p == nil {
		return nil, errNotCoordinator
	}
	t := c.newTxn(txnID, p, metadata{pid: pid, lastPID: noProducerID, epoch: noEpoch, lastEpoch: noEpoch,
		timeoutMs: timeoutMs, state: Empty, start: noTimestamp, updated: c.nowMs()})
	// Locking an id nobody else can see yet cannot wait, so it is safe
	// under the leaf c.mu.
	t.mu.Lock()
	c.txns[txnID] = t
	return t, nil
}

func (c *Coordinator) newTxn(id string, p *partition, m metadata) *txn {
	return &txn{c: c, id: id, part: p, meta: m}
}

// forgetLocked marks t gone, stops its timers and hands its waiting
// client, if any, NOT_COORDINATOR (through a), so that it finds the new
// coordinator. The caller has taken t out of the map.
//
// REQUIRES: t.mu held.
func (t *txn) forgetLocked(a *after) {
	t.gone = true
	t.cancelAlarmsLocked()
	t.send = nil
	t.answerLocked(errNotCoordinator, a)
	t.completedLocked(a)
}

// answerLocked hands the waiting client, if any, err (nil: success),
// through a.
//
// REQUIRES: t.mu held.
func (t *txn) answerLocked(err *kerr.Error, a *after) {
	if f := t.answer; f != nil {
		t.answer = nil
		a.do(func() { f(err) })
	}
}

// write appends the record of next, t's metadata after a transition, and
// makes it t's pending transition; once the write ends, then runs with
// t.mu held and t not gone: with nil when next is durable (t's metadata
// is next by then), else with the error a client gets (t still has next
// pending: then drops it, or tries again). An append refused at once runs
// then before write returns; the wait for its replication is left to a,
// to run with no lock held. If t is forgotten meanwhile, then does not
// run.
//
// REQUIRES: t.mu held.
func (t *txn) writeLocked(next metadata, a *after, then func(err *kerr.Error, a *after)) {
	c := t.c
	t.pending = &next
	rec := tombstone(t.id)
	if next.state != Dead {
		rec = valueRecord(t.id, &next)
	}
	wait, err := c.log.Append(t.id, encodeBatch(c.now(), rec), true)
	if err != nil {
		c.zl.Info("could not append a transaction's change", zap.String("transactional_id", t.id),
			zap.Stringer("state", next.state), zap.Error(err))
		then(appendError(err), a)
		return
	}
	a.do(func() {
		wait(func(err error) {
			var a after
			t.mu.Lock()
			switch {
			case t.gone || t.pending != &next:
				// Forgotten; or, for safety, another transition.
			case err != nil:
				c.zl.Info("a transaction's change was not replicated", zap.String("transactional_id", t.id),
					zap.Stringer("state", next.state), zap.Error(err))
				then(appendError(err), &a)
			default:
				t.meta, t.pending = next, nil
				t.armLocked(soon, &a)
				then(nil, &a)
			}
			if t.pending == nil && !t.gone {
				// The adds waiting for the write (or for the
				// completion, this write) may go on
				// (completion.go).
				t.completedLocked(&a)
			}
			t.mu.Unlock()
			a.run()
		})
	})
}

// dropLocked drops t's pending transition, whose write failed (Kafka
// resets the pending state): t stays as its log says.
//
// REQUIRES: t.mu held.
func (t *txn) dropLocked(a *after) {
	t.pending = nil
	t.armLocked(t.c.cfg.RetryBackoff, a)
}

// appendError is the error a client gets for a write to
// __transaction_state that failed, as Kafka's TransactionStateManager maps
// its append's: NOT_COORDINATOR when the partition is not led here (any
// more), UNKNOWN_SERVER_ERROR for a record too large, and
// COORDINATOR_NOT_AVAILABLE, which clients retry, for the rest (not
// enough replicas, a timeout).
func appendError(err error) *kerr.Error {
	switch {
	case errors.Is(err, kerr.NotCoordinator):
		return errNotCoordinator
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
		return kerr.UnknownServerError
	default:
		return errNotAvailable
	}
}

// after is what a section under a txn's mutex leaves to do once it is
// released: answers, waits for writes, markers to write. Each runs with
// no lock of the coordinator's held, in the order recorded.
type after struct{ fns []func() }

func (a *after) do(f func()) { a.fns = append(a.fns, f) }

// run does what was recorded, then forgets it. REQUIRES: no txn's mutex
// held.
func (a *after) run() {
	for i := 0; i < len(a.fns); i++ {
		a.fns[i]()
	}
	a.fns = nil
}
