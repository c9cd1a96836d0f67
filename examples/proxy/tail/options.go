package tail

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// An Option configures a Manager built by New.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	maxWait           time.Duration
	maxBytes          int32
	partitionMaxBytes int32
	idle              time.Duration
	cacheBytes        int
	now               func() time.Time
	log               *zap.Logger
	reg               prometheus.Registerer
}

func defaults() config {
	return config{
		maxWait:           500 * time.Millisecond,
		maxBytes:          50 << 20,
		partitionMaxBytes: 1 << 20,
		idle:              30 * time.Second,
		cacheBytes:        8 << 20,
		now:               time.Now,
		log:               zap.NewNop(),
	}
}

func (c *config) validate() error {
	switch {
	case c.maxWait <= 0:
		return fmt.Errorf("%w: tail.fetch.max.wait.ms must be positive", ErrInvalidOption)
	case c.maxBytes < 1 || c.partitionMaxBytes < 1:
		return fmt.Errorf("%w: tail fetch max bytes must be at least 1", ErrInvalidOption)
	case c.idle <= 0:
		return fmt.Errorf("%w: tail.idle.ms must be positive", ErrInvalidOption)
	case c.cacheBytes < 1:
		return fmt.Errorf("%w: cache.bytes.per.partition must be at least 1", ErrInvalidOption)
	}
	return nil
}

// WithFetch sets the tail fetches' max_wait_ms, max_bytes and
// partition_max_bytes (defaults 500ms, 50 MiB and 1 MiB, the Kafka
// consumer's fetch.max.bytes and max.partition.fetch.bytes).
func WithFetch(maxWait time.Duration, maxBytes, partitionMaxBytes int32) Option {
	return optionFunc(func(c *config) { c.maxWait, c.maxBytes, c.partitionMaxBytes = maxWait, maxBytes, partitionMaxBytes })
}

// WithIdle sets how long a tail no client fetch uses goes on (default 30s).
func WithIdle(d time.Duration) Option { return optionFunc(func(c *config) { c.idle = d }) }

// WithCacheBytes bounds each tailed partition's cache (default 8 MiB).
func WithCacheBytes(n int) Option { return optionFunc(func(c *config) { c.cacheBytes = n }) }

// WithLogger sets the logger (default: no-op).
func WithLogger(l *zap.Logger) Option {
	return optionFunc(func(c *config) {
		if l != nil {
			c.log = l
		}
	})
}

// WithRegisterer registers the tails' metrics on r (default: none).
func WithRegisterer(r prometheus.Registerer) Option { return optionFunc(func(c *config) { c.reg = r }) }
