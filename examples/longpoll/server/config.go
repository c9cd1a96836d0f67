package server

import (
	"flag"
	"fmt"
	"time"

	"github.com/gopurgatory/purgatory/timer"
)

// MaxKeyBytes is the longest key accepted, in bytes.
const MaxKeyBytes = 256

// Config holds the service's settings; Default returns it filled in.
type Config struct {
	// DefaultTimeout is how long a GET without a timeout parameter waits.
	DefaultTimeout time.Duration
	// MaxTimeout is the longest timeout a GET may ask for; more is a 400,
	// so that no client can hold a waiter (and its connection) for ever.
	MaxTimeout time.Duration
	// MaxWaiters caps the GETs waiting at once; one more is answered 503.
	MaxWaiters int64
	// MaxKeys caps the keys stored; a POST creating one more is a 507.
	MaxKeys int
	// MaxValueBytes caps a value; a larger POST body is a 413.
	MaxValueBytes int64
	// Clock is the purgatory's clock: nil for the real one, a
	// *timer.ManualClock in tests, whose Advance expires the waits due.
	Clock timer.Clock
}

// Default returns the settings `go run ./examples/longpoll` starts with.
func Default() Config {
	return Config{
		DefaultTimeout: 30 * time.Second,
		MaxTimeout:     time.Minute,
		MaxWaiters:     10_000,
		MaxKeys:        10_000,
		MaxValueBytes:  64 << 10,
	}
}

// validate reports the first setting out of range, wrapped in
// ErrInvalidConfig.
func (c *Config) validate() error {
	var err error
	switch {
	case c.MaxTimeout <= 0:
		err = fmt.Errorf("max timeout %v: not positive", c.MaxTimeout)
	case c.DefaultTimeout < 0 || c.DefaultTimeout > c.MaxTimeout:
		err = fmt.Errorf("default timeout %v: not within [0, max timeout %v]", c.DefaultTimeout, c.MaxTimeout)
	case c.MaxWaiters <= 0:
		err = fmt.Errorf("max waiters %d: not positive", c.MaxWaiters)
	case c.MaxKeys <= 0:
		err = fmt.Errorf("max keys %d: not positive", c.MaxKeys)
	case c.MaxValueBytes <= 0:
		err = fmt.Errorf("max value bytes %d: not positive", c.MaxValueBytes)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return nil
}

// RegisterFlags defines one flag per setting, with c's values as defaults.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.DefaultTimeout, "default-timeout", c.DefaultTimeout, "how long a GET without ?timeout= waits")
	fs.DurationVar(&c.MaxTimeout, "max-timeout", c.MaxTimeout, "longest ?timeout= a GET may ask for (more is a 400)")
	fs.Int64Var(&c.MaxWaiters, "max-waiters", c.MaxWaiters, "GETs waiting at once (one more is a 503)")
	fs.IntVar(&c.MaxKeys, "max-keys", c.MaxKeys, "keys stored (a POST creating one more is a 507)")
	fs.Int64Var(&c.MaxValueBytes, "max-value-bytes", c.MaxValueBytes, "largest value (a larger POST body is a 413)")
}
