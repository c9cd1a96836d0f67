package logdir

import (
	"fmt"
	"math"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// Kafka's defaults.
const (
	DefaultSegmentBytes       = 1 << 30            // log.segment.bytes
	DefaultIndexIntervalBytes = 4096               // log.index.interval.bytes
	DefaultRollAfter          = 7 * 24 * time.Hour // log.roll.hours

	// DefaultCheckpointInterval is Kafka's
	// log.flush.offset.checkpoint.interval.ms.
	DefaultCheckpointInterval = time.Minute

	// DefaultOpenSegments is how many sealed segment files the directory's
	// logs keep open by default (WithOpenSegments).
	DefaultOpenSegments = 256
)

// config is a directory's configuration, immutable after Open.
type config struct {
	segmentBytes int64 // log.segment.bytes
	// topicSegmentBytes overrides segmentBytes for the topics it names
	// (their segment.bytes).
	topicSegmentBytes map[string]int64
	indexInterval     int64         // log.index.interval.bytes
	rollAfter         time.Duration // log.roll.ms; <= 0: never by time
	flushMessages     int64         // log.flush.interval.messages
	flushInterval     time.Duration // log.flush.interval.ms; <= 0: never by time
	// checkpointInterval is log.flush.offset.checkpoint.interval.ms: how
	// often the recovery points are written; <= 0: only when needed.
	checkpointInterval time.Duration
	openSegments       int // sealed segment files kept open, all logs together
	nodeID             int32
	clock              storage.Clock
	log                *zap.Logger
	sync               func(*os.File) error // fsync; a test's counter
}

func defaultConfig() config {
	return config{
		segmentBytes:       DefaultSegmentBytes,
		indexInterval:      DefaultIndexIntervalBytes,
		rollAfter:          DefaultRollAfter,
		flushMessages:      math.MaxInt64,
		openSegments:       DefaultOpenSegments,
		checkpointInterval: DefaultCheckpointInterval,
		nodeID:             1,
		clock:              systemClock{},
		log:                zap.NewNop(),
		sync:               (*os.File).Sync,
	}
}

// segmentBytesOf returns the segment size of topic's partitions.
func (c *config) segmentBytesOf(topic string) int64 {
	if n, ok := c.topicSegmentBytes[topic]; ok {
		return n
	}
	return c.segmentBytes
}

func (c *config) validate() error {
	for topic, n := range c.topicSegmentBytes {
		if n < storage.BatchHeaderSize || n > math.MaxInt32 {
			return fmt.Errorf("%w: segment.bytes %d of %s, must be between %d and %d", ErrInvalidOption, n, topic, storage.BatchHeaderSize, math.MaxInt32)
		}
	}
	switch {
	case c.segmentBytes < storage.BatchHeaderSize || c.segmentBytes > math.MaxInt32:
		// Positions in the index are 32-bit, as Kafka's.
		return fmt.Errorf("%w: log.segment.bytes %d, must be between %d and %d", ErrInvalidOption, c.segmentBytes, storage.BatchHeaderSize, math.MaxInt32)
	case c.indexInterval < 0:
		return fmt.Errorf("%w: log.index.interval.bytes %d is negative", ErrInvalidOption, c.indexInterval)
	case c.flushMessages < 1:
		return fmt.Errorf("%w: log.flush.interval.messages %d, must be at least 1", ErrInvalidOption, c.flushMessages)
	case c.openSegments < 1:
		return fmt.Errorf("%w: %d open sealed segments, must be at least 1", ErrInvalidOption, c.openSegments)
	case c.nodeID < 0:
		return fmt.Errorf("%w: node.id %d is negative", ErrInvalidOption, c.nodeID)
	case c.clock == nil || c.log == nil || c.sync == nil:
		return fmt.Errorf("%w: nil clock, logger or sync", ErrInvalidOption)
	}
	return nil
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// An Option configures a directory opened by Open.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithSegmentBytes sets the size at which a partition's active segment is
// rolled: the next batch that would take it past n starts a new segment
// (log.segment.bytes, default 1 GiB, at most 2 GiB - 1). A batch larger
// than n has a segment of its own.
func WithSegmentBytes(n int64) Option { return optionFunc(func(c *config) { c.segmentBytes = n }) }

// WithTopicSegmentBytes sets the segment size of topic's partitions,
// instead of WithSegmentBytes' (Kafka's segment.bytes topic config; the
// broker gives __consumer_offsets offsets.topic.segment.bytes, 100 MiB,
// so that its compaction's dropped records leave the disk in files of
// that size).
func WithTopicSegmentBytes(topic string, n int64) Option {
	return optionFunc(func(c *config) {
		if c.topicSegmentBytes == nil {
			c.topicSegmentBytes = make(map[string]int64)
		}
		c.topicSegmentBytes[topic] = n
	})
}

// WithIndexIntervalBytes sets how many bytes of batches are appended
// between two entries of a segment's offset index
// (log.index.interval.bytes, default 4096): a read scans at most about
// that much from the entry it finds.
func WithIndexIntervalBytes(n int64) Option {
	return optionFunc(func(c *config) { c.indexInterval = n })
}

// WithRollAfter sets how long a segment takes appends, counted from its
// first batch, before the next append rolls a new one (log.roll.ms,
// default 7 days, Kafka's log.roll.hours); zero or negative: never by time.
func WithRollAfter(d time.Duration) Option { return optionFunc(func(c *config) { c.rollAfter = d }) }

// WithFlush sets when a partition's active segment is fsynced: once
// messages records have been appended since the last fsync
// (log.flush.interval.messages; at most math.MaxInt64, the default, which
// is never), and once interval has passed since then
// (log.flush.interval.ms, by a goroutine of the directory; zero or
// negative, the default, is never). Rolling a segment and closing a log
// fsync too. See the package doc for what each setting survives.
func WithFlush(messages int64, interval time.Duration) Option {
	return optionFunc(func(c *config) { c.flushMessages, c.flushInterval = messages, interval })
}

// WithCheckpointInterval sets how often the directory writes its logs'
// recovery points, the offsets below which each is fsynced
// (log.flush.offset.checkpoint.interval.ms, default a minute; zero or
// negative: only when a truncation lowers one, and at Close). After an
// unclean shutdown, recovery cuts a torn tail only at or past its log's
// recovery point (see the package doc, # Recovery).
func WithCheckpointInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.checkpointInterval = d })
}

// WithOpenSegments bounds the sealed segment files that the directory's
// logs keep open, all together (default DefaultOpenSegments): each sealed
// segment's .log is opened when read and kept in a cache of open files,
// the least recently read closed past n. Active segments (two files each,
// its .log and .index) are always open, and a read in progress keeps its
// file open whatever n is. Kafka keeps every segment open; this bounds the
// file descriptors a log dir needs to two per partition plus n, so that
// a broker can budget them (see package server).
func WithOpenSegments(n int) Option { return optionFunc(func(c *config) { c.openSegments = n }) }

// WithNodeID sets the broker's node.id, which the directory's
// meta.properties records when it is made and checks when it is opened
// again (default 1).
func WithNodeID(id int32) Option { return optionFunc(func(c *config) { c.nodeID = id }) }

// WithClock sets the wall clock that segment roll times and append times
// read (default: time.Now).
func WithClock(clk storage.Clock) Option { return optionFunc(func(c *config) { c.clock = clk }) }

// WithLogger sets the logger (default: no-op). Recovery logs what it
// truncates and rebuilds at warn level.
func WithLogger(l *zap.Logger) Option { return optionFunc(func(c *config) { c.log = l }) }

// withSync replaces fsync, for tests that count them.
func withSync(sync func(*os.File) error) Option { return optionFunc(func(c *config) { c.sync = sync }) }
