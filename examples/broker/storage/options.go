package storage

import (
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/timer"
)

// A Clock tells the wall-clock time: record timestamps are wall-clock
// milliseconds, so retention compares them with wall-clock time.
type Clock interface {
	Now() time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// config is a store's configuration, immutable after New.
type config struct {
	clock           Clock
	log             *zap.Logger
	defaults        TopicConfig
	checkInterval   time.Duration
	producerBatches int
	producerExpiry  time.Duration
	open            LogOpener
	catalog         Catalog        // nil: topics live in memory
	maxPartitions   int            // all topics' partitions together; <= 0: MaxPartitions per topic only
	reserved        map[string]int // partitions of maxPartitions kept for topics, until they exist
	// inflateLimit bounds what a batch's records may decompress to,
	// beyond its topic's max.message.bytes (WithInflateLimit).
	inflateLimit int
	// skipRecords turns the validation of records off, for the
	// benchmark that measures what it costs.
	skipRecords bool
	// cleanerInterval is log.cleaner.backoff.ms, cleanerMapKeys bounds a
	// pass's offset map, cleanerTimer is the timer the cleaner runs on
	// (nil: its own); see cleaning.go.
	cleanerInterval time.Duration
	cleanerMapKeys  int
	cleanerTimer    *timer.Timer
	// inflating bounds the batches being decompressed at once, by New:
	// each holds up to its topic's max.message.bytes.
	inflating chan struct{}
}

// validateBatch validates b's records (records.go), which may decompress
// to maxMessageBytes, its topic's max.message.bytes, or the store's
// inflate limit, whichever is larger. A compressed batch takes one of the
// store's inflating slots (GOMAXPROCS of them) while it is inflated and
// walked: decompressing is the costly part of a produce, and no more
// batches are inflated at once than there are cores.
func (c *config) validateBatch(b *Batch, maxMessageBytes int) error {
	if c.skipRecords {
		return nil
	}
	if b.attrs&attrCompression != codecNone {
		c.inflating <- struct{}{}
		defer func() { <-c.inflating }()
	}
	return validateRecords(b, max(maxMessageBytes, c.inflateLimit))
}

func defaultConfig() config {
	return config{
		clock:           systemClock{},
		log:             zap.NewNop(),
		defaults:        DefaultTopicConfig(),
		checkInterval:   5 * time.Minute, // log.retention.check.interval.ms
		producerBatches: 5,
		producerExpiry:  24 * time.Hour, // producer.id.expiration.ms
		inflateLimit:    DefaultInflateLimit,
		cleanerInterval: DefaultCleanerInterval,
		cleanerMapKeys:  DefaultCleanerMapKeys,
		open:            func(string, TopicID, int32) (Log, error) { return NewMemLog(), nil },
	}
}

func (c *config) validate() error {
	switch {
	case c.clock == nil:
		return fmt.Errorf("%w: nil clock", ErrInvalidOption)
	case c.log == nil:
		return fmt.Errorf("%w: nil logger", ErrInvalidOption)
	case c.open == nil:
		return fmt.Errorf("%w: nil log opener", ErrInvalidOption)
	case c.producerBatches < 1:
		return fmt.Errorf("%w: producers must be remembered for at least one batch, not %d", ErrInvalidOption, c.producerBatches)
	case c.cleanerMapKeys < 1:
		return fmt.Errorf("%w: a cleaner's map of %d keys", ErrInvalidOption, c.cleanerMapKeys)
	case c.inflateLimit < 0:
		return fmt.Errorf("%w: inflate limit %d is negative", ErrInvalidOption, c.inflateLimit)
	case c.defaults.MaxMessageBytes < batchOverhead:
		return fmt.Errorf("%w: max.message.bytes %d is below a batch header", ErrInvalidOption, c.defaults.MaxMessageBytes)
	}
	return nil
}

// An Option configures a Store built by New.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithClock sets the wall clock retention and producer expiry read
// (default: time.Now).
func WithClock(c Clock) Option { return optionFunc(func(cfg *config) { cfg.clock = c }) }

// WithLogger sets the logger (default: no-op).
func WithLogger(l *zap.Logger) Option { return optionFunc(func(cfg *config) { cfg.log = l }) }

// WithTopicDefaults sets the configs a topic has unless created with
// others: the broker's log.retention.ms, log.retention.bytes,
// message.max.bytes, min.insync.replicas, log.segment.bytes and
// log.roll.ms, and Kafka's compaction defaults (default:
// DefaultTopicConfig, Kafka's; a MinInsyncReplicas left zero is 1). Start
// from DefaultTopicConfig: a field left zero means what its zero means
// (min.cleanable.dirty.ratio 0 cleans at any dirt).
func WithTopicDefaults(c TopicConfig) Option {
	return optionFunc(func(cfg *config) {
		c.MinInsyncReplicas = c.MinISR()
		cfg.defaults = c
	})
}

// WithRetentionCheckInterval sets how often the store's goroutine applies
// retention to every partition (log.retention.check.interval.ms, default 5
// minutes); zero or negative starts no goroutine. Appends apply retention
// to their own partition whatever this is.
func WithRetentionCheckInterval(d time.Duration) Option {
	return optionFunc(func(cfg *config) { cfg.checkInterval = d })
}

// WithProducerState sets how many of each idempotent producer's last
// batches a partition remembers to recognise retries (default 5, the most
// a producer may have in flight), and after how long without writing a
// producer is forgotten (default 24 hours, producer.id.expiration.ms;
// negative: never); one whose transaction is open is never forgotten.
func WithProducerState(batches int, expiry time.Duration) Option {
	return optionFunc(func(cfg *config) { cfg.producerBatches, cfg.producerExpiry = batches, expiry })
}

// WithLogOpener sets how a partition's log is opened (default: an empty
// in-memory log, NewMemLog).
func WithLogOpener(open LogOpener) Option { return optionFunc(func(cfg *config) { cfg.open = open }) }

// WithCatalog sets where topics are recorded, so that New finds them again
// (default: nowhere, topics live in memory). Pair it with a durable
// LogOpener: a catalog without one restores topics with empty logs.
func WithCatalog(c Catalog) Option { return optionFunc(func(cfg *config) { cfg.catalog = c }) }

// WithMaxPartitions bounds the partitions of all topics together (Kafka's
// max.broker.partitions, KIP-578): a creation that would take the store
// past n fails with ErrPartitionLimit (default: no bound but MaxPartitions
// per topic). Topics loaded from the catalog count, and are loaded
// whatever their number: the bound is on creating more.
func WithMaxPartitions(n int) Option { return optionFunc(func(cfg *config) { cfg.maxPartitions = n }) }

// WithReservedPartitions keeps n partitions of WithMaxPartitions' bound
// for topic name until it exists: other topics are refused before they
// take them. An internal topic (the offsets topic), created on first use,
// is reserved so that clients' topics cannot leave it no room, after
// which no consumer group could work.
func WithReservedPartitions(name string, n int) Option {
	return optionFunc(func(cfg *config) {
		if cfg.reserved == nil {
			cfg.reserved = make(map[string]int)
		}
		cfg.reserved[name] = n
	})
}

// DefaultInflateLimit is the default of WithInflateLimit: Kafka's
// socket.request.max.bytes, the largest request a broker reads.
const DefaultInflateLimit = 100 << 20

// WithInflateLimit bounds what a client's batch may decompress to: its
// records are refused (ErrBatchTooLarge) past n bytes, or past its topic's
// max.message.bytes if larger, without being inflated further (default
// DefaultInflateLimit). Kafka has no such bound; the broker passes its
// socket.request.max.bytes: a batch may inflate to the most a client could
// have sent uncompressed, no more. Validation holds a few buffers whatever
// the bound: records are walked as they are inflated, not kept.
func WithInflateLimit(n int) Option { return optionFunc(func(cfg *config) { cfg.inflateLimit = n }) }

// WithCleanerInterval sets how often the log cleaner looks for partitions
// of compacted topics to clean (Kafka's log.cleaner.backoff.ms, default
// DefaultCleanerInterval); zero or negative schedules none, and Clean
// runs a pass when called. See cleaning.go.
func WithCleanerInterval(d time.Duration) Option {
	return optionFunc(func(cfg *config) { cfg.cleanerInterval = d })
}

// WithCleanerMapKeys bounds the keys of a cleaning pass's offset map
// (default DefaultCleanerMapKeys, about Kafka's 128 MiB
// log.cleaner.dedupe.buffer.size): a pass maps the dirty segments until
// the map holds n keys, and cleans up to there.
func WithCleanerMapKeys(n int) Option {
	return optionFunc(func(cfg *config) { cfg.cleanerMapKeys = n })
}

// WithCleanerTimer runs the log cleaner's schedule on tm (default: a timer
// the store makes, and closes with Close). The store does not close tm.
func WithCleanerTimer(tm *timer.Timer) Option {
	return optionFunc(func(cfg *config) { cfg.cleanerTimer = tm })
}
