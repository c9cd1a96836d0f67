package server

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"time"
)

// Config is the proxy's configuration. Names follow Kafka's: the broker's
// configs for what the proxy serves (listeners, socket.request.max.bytes),
// the consumer's for how it reads upstream (request.timeout.ms,
// metadata.max.age.ms), and the proxy's own for its cache and tails.
type Config struct {
	// Upstream lists bootstrap brokers of the cluster behind the proxy,
	// host:port[,host:port...] (a client's bootstrap.servers).
	Upstream string
	// Listener is the address clients connect to (listeners).
	Listener string
	// AdvertisedListener is the address clients are told to connect to
	// (advertised.listeners); empty means the listener's actual address.
	AdvertisedListener string
	// NodeID is the broker id the proxy calls itself in the metadata it
	// answers: clients see one broker, which leads every partition and
	// coordinates every group.
	NodeID int32
	// MetricsAddr serves /metrics and /debug/pprof; empty disables it.
	MetricsAddr string
	// ClientID is the client id of the proxy's own requests upstream (its
	// tail fetches, metadata); forwarded requests keep their client's.
	ClientID string

	SocketRequestMaxBytes int32         // socket.request.max.bytes
	MaxInFlightPerConn    int           // queued.max.requests.per.connection
	ConnectionsMaxIdle    time.Duration // connections.max.idle.ms
	// MaxConnections bounds the client connections open at once
	// (max.connections; -1, the default, is unbounded, as Kafka's), and
	// MaxConnectionsPerIP those from one client address
	// (max.connections.per.ip): a connection past either is closed when
	// it is accepted, and counted in proxy_refusals_total.
	MaxConnections      int
	MaxConnectionsPerIP int
	// QueuedMaxRequestBytes bounds the bytes of client requests read and
	// not yet answered (queued.max.request.bytes): past it the proxy
	// stops reading sockets. -1 (or 0), the default, is unbounded
	// (Kafka's).
	QueuedMaxRequestBytes int64
	// QueuedMaxRequestBytesPerConnection and QueuedMaxRequestBytesPerIP
	// bound the bytes of the client requests being read (begun, not yet
	// whole) on one connection and from one client address
	// (queued.max.request.bytes.per.connection and .per.ip, as the
	// example broker's): a request over either is refused, one its
	// address has no room for yet waits before it is read. 0, the
	// default, is a quarter and a half of queued.max.request.bytes
	// (unbounded with it); -1 is unbounded.
	QueuedMaxRequestBytesPerConnection int64
	QueuedMaxRequestBytesPerIP         int64
	// SocketReadTimeout closes a client connection whose request has not
	// arrived whole this long after its first byte
	// (socket.read.timeout.ms, as the example broker's). It, and the
	// settings above, are checked by package kafkanet when the proxy
	// starts.
	SocketReadTimeout time.Duration

	CacheBytesPerPartition int           // cache.bytes.per.partition
	TailFetchMaxWait       time.Duration // tail.fetch.max.wait.ms
	TailFetchMaxBytes      int32         // tail.fetch.max.bytes
	TailFetchPartitionMax  int32         // tail.fetch.partition.max.bytes
	TailIdle               time.Duration // tail.idle.ms

	// FetchSessionSlots bounds the clients' fetch sessions (KIP-227) the
	// proxy keeps (max.incremental.fetch.session.cache.slots; 0: none,
	// every fetch is answered without one), and FetchSessionEviction is
	// how long a session is unused before a new one may take its slot
	// (min.incremental.fetch.session.eviction.ms). See fetch_sessions.go.
	FetchSessionSlots    int
	FetchSessionEviction time.Duration

	RequestTimeout      time.Duration // request.timeout.ms: upstream answers
	MetadataMaxAge      time.Duration // metadata.max.age.ms
	ReconnectBackoff    time.Duration // reconnect.backoff.ms
	ReconnectBackoffMax time.Duration // reconnect.backoff.max.ms

	// Security is both sides' TLS and SASL (config_security.go).
	Security
}

// Default returns the defaults: a proxy on 127.0.0.1:9192 in front of a
// broker on 127.0.0.1:9092.
func Default() Config {
	return Config{
		Upstream:               "127.0.0.1:9092",
		Listener:               "127.0.0.1:9192",
		NodeID:                 0,
		ClientID:               "purgatory-proxy",
		SocketRequestMaxBytes:  100 << 20,
		MaxInFlightPerConn:     100,
		ConnectionsMaxIdle:     10 * time.Minute,
		MaxConnections:         -1,
		MaxConnectionsPerIP:    math.MaxInt32,
		QueuedMaxRequestBytes:  -1,
		SocketReadTimeout:      30 * time.Second,
		CacheBytesPerPartition: 8 << 20,
		TailFetchMaxWait:       500 * time.Millisecond,
		TailFetchMaxBytes:      50 << 20,
		TailFetchPartitionMax:  1 << 20,
		TailIdle:               30 * time.Second,
		FetchSessionSlots:      1000,
		FetchSessionEviction:   2 * time.Minute,
		RequestTimeout:         30 * time.Second,
		MetadataMaxAge:         30 * time.Second,
		ReconnectBackoff:       50 * time.Millisecond,
		ReconnectBackoffMax:    time.Second,
		Security:               defaultSecurity(),
	}
}

// validate reports the first setting out of range.
func (c *Config) validate() error {
	switch {
	case len(c.seeds()) == 0:
		return errors.New("upstream: empty")
	case c.Listener == "":
		return errors.New("listeners: empty")
	case c.NodeID < 0:
		return fmt.Errorf("node.id: %d, must not be negative", c.NodeID)
	case c.SocketRequestMaxBytes < 1024:
		return fmt.Errorf("socket.request.max.bytes: %d, must be at least 1024", c.SocketRequestMaxBytes)
	case c.MaxInFlightPerConn < 1:
		return fmt.Errorf("queued.max.requests.per.connection: %d, must be at least 1", c.MaxInFlightPerConn)
	case c.CacheBytesPerPartition < 1:
		return fmt.Errorf("cache.bytes.per.partition: %d, must be at least 1", c.CacheBytesPerPartition)
	case c.TailFetchMaxWait <= 0 || c.TailIdle <= 0:
		return errors.New("tail.fetch.max.wait.ms and tail.idle.ms must be positive")
	case c.TailFetchMaxBytes < 1 || c.TailFetchPartitionMax < 1:
		return errors.New("tail.fetch.max.bytes and tail.fetch.partition.max.bytes must be at least 1")
	case c.FetchSessionSlots < 0 || c.FetchSessionEviction < 0:
		return errors.New("max.incremental.fetch.session.cache.slots and min.incremental.fetch.session.eviction.ms must not be negative")
	case c.RequestTimeout <= 0 || c.MetadataMaxAge <= 0:
		return errors.New("request.timeout.ms and metadata.max.age.ms must be positive")
	case c.ReconnectBackoff < 0 || c.ReconnectBackoffMax < c.ReconnectBackoff:
		return errors.New("reconnect.backoff.ms must be between 0 and reconnect.backoff.max.ms")
	}
	for _, a := range c.seeds() {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("upstream: %q: %w", a, err)
		}
	}
	return c.validateSecurity()
}

// maxConnections is MaxConnections with -1 read as unbounded.
func (c *Config) maxConnections() int {
	if c.MaxConnections == -1 {
		return math.MaxInt
	}
	return c.MaxConnections
}

// seeds splits Upstream.
func (c *Config) seeds() []string {
	var out []string
	for _, s := range strings.Split(c.Upstream, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// RegisterFlags defines one flag per setting, named as Kafka names it
// (--tail.fetch.max.wait.ms=500), with c's values as defaults. A *.ms
// setting is a count of milliseconds.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Upstream, "upstream", c.Upstream, "bootstrap brokers of the cluster behind the proxy, host:port[,host:port...]")
	fs.StringVar(&c.Listener, "listeners", c.Listener, "the listener clients connect to, host:port (PLAINTEXT) or NAME://host:port")
	fs.StringVar(&c.AdvertisedListener, "advertised.listeners", c.AdvertisedListener, "host:port clients are told to use (default: the listener's address)")
	fs.Var(int32Value{&c.NodeID}, "node.id", "the broker id clients see the proxy as")
	fs.StringVar(&c.MetricsAddr, "metrics.listener", c.MetricsAddr, "host:port serving /metrics and /debug/pprof (empty: off)")
	fs.StringVar(&c.ClientID, "client.id", c.ClientID, "client id of the proxy's own upstream requests")
	fs.Var(int32Value{&c.SocketRequestMaxBytes}, "socket.request.max.bytes", "largest request accepted; a larger one closes the connection")
	fs.IntVar(&c.MaxInFlightPerConn, "queued.max.requests.per.connection", c.MaxInFlightPerConn, "requests read ahead of their responses on one connection")
	fs.Var(msValue{&c.ConnectionsMaxIdle}, "connections.max.idle.ms", "close client connections idle this long")
	fs.IntVar(&c.MaxConnections, "max.connections", c.MaxConnections, "client connections open at once; more are closed when accepted (-1: unbounded)")
	fs.IntVar(&c.MaxConnectionsPerIP, "max.connections.per.ip", c.MaxConnectionsPerIP, "client connections open at once from one address")
	fs.Int64Var(&c.QueuedMaxRequestBytes, "queued.max.request.bytes", c.QueuedMaxRequestBytes, "bytes of client requests held; past it sockets are not read (-1: unbounded)")
	fs.Int64Var(&c.QueuedMaxRequestBytesPerConnection, "queued.max.request.bytes.per.connection", c.QueuedMaxRequestBytesPerConnection,
		"bytes of a client request being read on one connection; a larger one closes it (0: a quarter of queued.max.request.bytes, -1: unbounded)")
	fs.Int64Var(&c.QueuedMaxRequestBytesPerIP, "queued.max.request.bytes.per.ip", c.QueuedMaxRequestBytesPerIP,
		"bytes of the client requests being read from one address; past it they wait, a larger one is refused (0: half of queued.max.request.bytes, -1: unbounded)")
	fs.Var(msValue{&c.SocketReadTimeout}, "socket.read.timeout.ms", "close a client connection whose request has not arrived whole this long after its first byte")
	fs.IntVar(&c.CacheBytesPerPartition, "cache.bytes.per.partition", c.CacheBytesPerPartition, "bytes of recent batches cached per tailed partition (the newest batch stays whatever its size)")
	fs.Var(msValue{&c.TailFetchMaxWait}, "tail.fetch.max.wait.ms", "max_wait_ms of the shared upstream long polls")
	fs.Var(int32Value{&c.TailFetchMaxBytes}, "tail.fetch.max.bytes", "max_bytes of a shared upstream long poll")
	fs.Var(int32Value{&c.TailFetchPartitionMax}, "tail.fetch.partition.max.bytes", "partition_max_bytes of a shared upstream long poll")
	fs.Var(msValue{&c.TailIdle}, "tail.idle.ms", "stop tailing a partition no client fetch used for this long")
	fs.IntVar(&c.FetchSessionSlots, "max.incremental.fetch.session.cache.slots", c.FetchSessionSlots, "clients' fetch sessions (KIP-227) kept (0: none, every fetch is full)")
	fs.Var(msValue{&c.FetchSessionEviction}, "min.incremental.fetch.session.eviction.ms", "how long a fetch session is unused before a new one may take its slot")
	fs.Var(msValue{&c.RequestTimeout}, "request.timeout.ms", "how long an upstream answer may take, on top of what the request waits by design")
	fs.Var(msValue{&c.MetadataMaxAge}, "metadata.max.age.ms", "how often the upstream metadata is refreshed")
	fs.Var(msValue{&c.ReconnectBackoff}, "reconnect.backoff.ms", "how long an upstream broker that failed to dial is not dialled again")
	fs.Var(msValue{&c.ReconnectBackoffMax}, "reconnect.backoff.max.ms", "the longest that backoff grows to")
	c.registerSecurityFlags(fs)
}

// LoadProperties sets configs from a Kafka-style properties file: name=value
// (or name: value) lines, # and ! comments, blank lines ignored. Names are
// the flags'; an unknown name is an error, so that a typo is not silently
// ignored.
func (c *Config) LoadProperties(r io.Reader) error {
	fs := flag.NewFlagSet("properties", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.RegisterFlags(fs)
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i < 0 {
			return fmt.Errorf("line %d: want name=value, got %q", n, line)
		}
		name, value := strings.TrimSpace(line[:i]), strings.TrimSpace(line[i+1:])
		if fs.Lookup(name) == nil {
			return fmt.Errorf("line %d: unknown config %q", n, name)
		}
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("line %d: %s: %w", n, name, err)
		}
	}
	return sc.Err()
}

// msValue is a duration set as a count of milliseconds.
type msValue struct{ d *time.Duration }

func (v msValue) String() string {
	if v.d == nil {
		return "0"
	}
	return strconv.FormatInt(v.d.Milliseconds(), 10)
}

func (v msValue) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return err
	}
	*v.d = time.Duration(n) * time.Millisecond
	return nil
}

// int32Value is an int32 flag.
type int32Value struct{ p *int32 }

func (v int32Value) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.FormatInt(int64(*v.p), 10)
}

func (v int32Value) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return err
	}
	*v.p = int32(n)
	return nil
}
