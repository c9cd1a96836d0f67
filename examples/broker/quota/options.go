package quota

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gopurgatory/purgatory/timer"
)

// An Option configures a Manager.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	samples int           // quota.window.num
	window  time.Duration // quota.window.size.seconds
	clock   timer.Clock
	reg     prometheus.Registerer
	ns      string
}

// The defaults, Kafka's.
const (
	DefaultSamples = 11
	DefaultWindow  = time.Second
)

func defaultConfig() config {
	return config{samples: DefaultSamples, window: DefaultWindow, ns: "kafka"}
}

func (c *config) validate() error {
	switch {
	case c.samples < 1:
		return fmt.Errorf("%w: quota.window.num %d, must be at least 1", ErrInvalidConfig, c.samples)
	case c.window < time.Millisecond:
		return fmt.Errorf("%w: quota.window.size %v, must be at least 1ms", ErrInvalidConfig, c.window)
	}
	return nil
}

// WithWindows sets Kafka's quota.window.num (11) and
// quota.window.size.seconds (1s): a bucket holds their product's worth of
// its quota, the longest throttle.
func WithWindows(samples int, size time.Duration) Option {
	return optionFunc(func(c *config) { c.samples, c.window = samples, size })
}

// WithClock sets the clock buckets refill on (the real one by
// default): a *timer.ManualClock makes them deterministic.
func WithClock(clk timer.Clock) Option { return optionFunc(func(c *config) { c.clock = clk }) }

// WithRegisterer registers the Manager's metric on r:
// <namespace>_quota_throttle_time_seconds{type="..."}, the throttle
// times it gave, by quota type. None by default.
func WithRegisterer(r prometheus.Registerer, namespace string) Option {
	return optionFunc(func(c *config) { c.reg, c.ns = r, namespace })
}
