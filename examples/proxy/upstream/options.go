package upstream

import (
	"crypto/tls"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/sasl"
	"go.uber.org/zap"
)

// An Option configures a Cluster built by New.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	seeds               []string
	clientID            string
	dialTimeout         time.Duration
	requestTimeout      time.Duration
	metadataMaxAge      time.Duration
	metadataMinAge      time.Duration
	reconnectBackoff    time.Duration
	reconnectBackoffMax time.Duration
	log                 *zap.Logger
	reg                 prometheus.Registerer
	tls                 *tls.Config    // nil: PLAINTEXT (auth.go)
	sasl                sasl.Mechanism // nil: no SASL (auth.go)
}

func defaults() config {
	return config{
		clientID:            "purgatory-proxy",
		dialTimeout:         10 * time.Second,
		requestTimeout:      30 * time.Second,
		metadataMaxAge:      30 * time.Second,
		metadataMinAge:      100 * time.Millisecond,
		reconnectBackoff:    50 * time.Millisecond,
		reconnectBackoffMax: time.Second,
		log:                 zap.NewNop(),
	}
}

func (c *config) validate() error {
	switch {
	case len(c.seeds) == 0:
		return fmt.Errorf("%w: no seed broker", ErrInvalidOption)
	case c.dialTimeout <= 0 || c.requestTimeout <= 0:
		return fmt.Errorf("%w: dial and request timeouts must be positive", ErrInvalidOption)
	case c.metadataMaxAge <= 0 || c.metadataMinAge < 0:
		return fmt.Errorf("%w: metadata.max.age.ms must be positive", ErrInvalidOption)
	case c.reconnectBackoff < 0 || c.reconnectBackoffMax < c.reconnectBackoff:
		return fmt.Errorf("%w: reconnect backoffs: 0 <= reconnect.backoff.ms <= reconnect.backoff.max.ms", ErrInvalidOption)
	}
	return nil
}

// WithSeeds sets the brokers to bootstrap from, as host:port (required).
func WithSeeds(addrs ...string) Option {
	return optionFunc(func(c *config) { c.seeds = append([]string(nil), addrs...) })
}

// WithClientID sets the client id of the Cluster's own requests (its
// metadata, API versions and tail fetches; a client's requests keep the
// client's id). Default "purgatory-proxy".
func WithClientID(id string) Option { return optionFunc(func(c *config) { c.clientID = id }) }

// WithDialTimeout bounds each dial (default 10s).
func WithDialTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.dialTimeout = d })
}

// WithRequestTimeout bounds the wait for each answer, on top of what the
// request may wait upstream (Kafka's request.timeout.ms; default 30s).
func WithRequestTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.requestTimeout = d })
}

// WithMetadataMaxAge sets how often the metadata is refreshed (Kafka's
// metadata.max.age.ms; default 30s), and WithMetadataMinAge the least time
// between two refreshes that Refresh asks for (default 100ms).
func WithMetadataMaxAge(d time.Duration) Option {
	return optionFunc(func(c *config) { c.metadataMaxAge = d })
}

// WithMetadataMinAge: see WithMetadataMaxAge.
func WithMetadataMinAge(d time.Duration) Option {
	return optionFunc(func(c *config) { c.metadataMinAge = d })
}

// WithReconnectBackoff sets how long an address that failed to dial is
// not dialled again, doubling on each failure up to max (Kafka's
// reconnect.backoff.ms and reconnect.backoff.max.ms; default 50ms and 1s).
func WithReconnectBackoff(d, max time.Duration) Option {
	return optionFunc(func(c *config) { c.reconnectBackoff, c.reconnectBackoffMax = d, max })
}

// WithLogger sets the logger (default: no-op).
func WithLogger(l *zap.Logger) Option {
	return optionFunc(func(c *config) {
		if l != nil {
			c.log = l
		}
	})
}

// WithRegisterer registers the upstream metrics on r: requests sent by API,
// connections open, failures by reason. Without it there are none.
func WithRegisterer(r prometheus.Registerer) Option { return optionFunc(func(c *config) { c.reg = r }) }
