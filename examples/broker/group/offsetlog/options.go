package offsetlog

import (
	"fmt"
	"math"
	"os"
	"time"

	"go.uber.org/zap"
)

// config is a log's configuration, immutable after Open.
type config struct {
	flushMessages int64         // log.flush.interval.messages
	flushInterval time.Duration // log.flush.interval.ms; <= 0: never by time
	compactAfter  int64         // dead records that make a compaction worth it
	clean         bool          // the last shutdown was clean: no torn tail may be cut
	log           *zap.Logger
	sync          func(*os.File) error
}

func defaultConfig() config {
	return config{
		flushMessages: math.MaxInt64,
		compactAfter:  DefaultCompactAfter,
		log:           zap.NewNop(),
		sync:          (*os.File).Sync,
	}
}

// DefaultCompactAfter is how many dead records (overwritten, deleted)
// the log holds at least before it compacts.
const DefaultCompactAfter = 10_000

func (c *config) validate() error {
	switch {
	case c.flushMessages < 1:
		return fmt.Errorf("%w: flush after %d records", ErrInvalidOption, c.flushMessages)
	case c.compactAfter < 1:
		return fmt.Errorf("%w: compact after %d dead records", ErrInvalidOption, c.compactAfter)
	case c.log == nil || c.sync == nil:
		return fmt.Errorf("%w: nil logger or sync", ErrInvalidOption)
	}
	return nil
}

// An Option configures a log opened by Open.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithFlush sets when the log is fsynced, as the broker's partitions are
// (log.flush.interval.messages and log.flush.interval.ms): once messages
// records were written since the last fsync, inside the write (1: every
// change, before the coordinator answers), and every interval by a
// goroutine of the log (zero or negative: never). Defaults: never, as
// Kafka's. Compaction and Close fsync too.
func WithFlush(messages int64, interval time.Duration) Option {
	return optionFunc(func(c *config) { c.flushMessages, c.flushInterval = messages, interval })
}

// WithCompactAfter sets how many dead records (offsets overwritten or
// deleted, groups deleted) the log holds before it is compacted, once they
// also outnumber the live ones (default DefaultCompactAfter).
func WithCompactAfter(n int64) Option { return optionFunc(func(c *config) { c.compactAfter = n }) }

// WithLogger sets the logger (default: no-op). Replay logs a torn tail it
// cuts, and compactions, at warn and info levels.
func WithLogger(l *zap.Logger) Option { return optionFunc(func(c *config) { c.log = l }) }

// withSync replaces fsync, for tests that count or fail them.
func withSync(sync func(*os.File) error) Option { return optionFunc(func(c *config) { c.sync = sync }) }

// WithCleanShutdown says whether the log was closed cleanly before this
// Open (the log dir it is kept in says so: logdir.Dir.CleanShutdown). A
// log closed cleanly has no torn tail: a bad last batch then fails Open,
// naming the position, rather than being cut (default false: cut, as
// after a crash).
func WithCleanShutdown(clean bool) Option { return optionFunc(func(c *config) { c.clean = clean }) }
