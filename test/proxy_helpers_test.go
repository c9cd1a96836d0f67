package test

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"

	proxy "github.com/gopurgatory/purgatory/examples/proxy/server"
)

// This file holds what the proxy's end-to-end tests share: a proxy started
// in front of a broker of the test, kgo clients of it, the metrics of a
// registry, and a consumer that records what it reads.

// startProxy runs a proxy in front of upstream (host:port[,...]) on a
// free loopback port until the test ends. Its tails poll every 200ms and
// its metadata refreshes within 100ms of an error, so that tests move on
// quickly.
func startProxy(t testing.TB, upstream string, tweak ...func(*proxy.Config)) *proxy.Server {
	t.Helper()
	cfg := proxy.Default()
	cfg.Upstream = upstream
	cfg.Listener = "127.0.0.1:0"
	cfg.TailFetchMaxWait = 200 * time.Millisecond
	cfg.ReconnectBackoffMax = 200 * time.Millisecond
	for _, f := range tweak {
		f(&cfg)
	}
	p, err := proxy.New(cfg, zaptest.NewLogger(t, zaptest.Level(proxyLogLevel())))
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- p.Serve() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, p.Close(ctx))
		require.NoError(t, <-served)
	})
	return p
}

// proxyClient returns a kgo client of the proxy, closed when the test ends.
func proxyClient(t testing.TB, p *proxy.Server, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(p.Addr().String()),
		kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelWarn, nil)),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// metric sums the samples of a counter or gauge in reg whose labels
// include labels.
func metric(t testing.TB, reg prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue next
				}
			}
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				sum += float64(m.GetHistogram().GetSampleCount()) // a histogram: its count
			}
		}
	}
	return sum
}

// tape records what one consumer read, per partition, in order.
type tape struct {
	mu   sync.Mutex // guards the following
	recs map[int32][]*kgo.Record
	n    int
}

func newTape() *tape { return &tape{recs: make(map[int32][]*kgo.Record)} }

func (tp *tape) add(rs []*kgo.Record) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	for _, r := range rs {
		tp.recs[r.Partition] = append(tp.recs[r.Partition], r)
		tp.n++
	}
}

func (tp *tape) len() int {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.n
}

// partition returns a copy of what was read of p.
func (tp *tape) partition(p int32) []*kgo.Record {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return append([]*kgo.Record(nil), tp.recs[p]...)
}

// consume polls cl into tp on a goroutine until the test ends or stop is
// called; fetch errors other than the client closing fail the test unless
// tolerate is set (a test that restarts the upstream broker expects
// retriable ones).
func consume(t testing.TB, cl *kgo.Client, tp *tape, tolerate bool) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			if fs.IsClientClosed() || ctx.Err() != nil {
				return
			}
			fs.EachError(func(topic string, p int32, err error) {
				if !tolerate {
					t.Errorf("fetching %s-%d: %v", topic, p, err)
				}
			})
			tp.add(fs.Records())
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// produced is what a producer wrote: each partition's records in offset
// order, as acknowledged.
type produced struct {
	mu   sync.Mutex
	recs map[int32][]*kgo.Record
}

func (pr *produced) add(r *kgo.Record) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.recs == nil {
		pr.recs = make(map[int32][]*kgo.Record)
	}
	pr.recs[r.Partition] = append(pr.recs[r.Partition], r)
}

func (pr *produced) partition(p int32) []*kgo.Record {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	out := append([]*kgo.Record(nil), pr.recs[p]...)
	sort.Slice(out, func(i, j int) bool { return out[i].Offset < out[j].Offset })
	return out
}

// payload returns the i-th record's value: every byte value appears, so
// that a byte lost, added or changed on the way shows.
func payload(i int) []byte {
	b := make([]byte, 16+i%300)
	for j := range b {
		b[j] = byte(i*31 + j)
	}
	copy(b, fmt.Sprintf("%08d", i))
	return b
}

// sameRecords checks that got is want, record by record: offsets, keys,
// values and headers, byte for byte.
func sameRecords(t testing.TB, who string, p int32, want, got []*kgo.Record) {
	t.Helper()
	require.Len(t, got, len(want), "%s: partition %d: every record once", who, p)
	for i := range want {
		w, g := want[i], got[i]
		require.Equal(t, w.Offset, g.Offset, "%s: partition %d record %d: offset, in order", who, p, i)
		require.Equal(t, w.Key, g.Key, "%s: partition %d offset %d: key", who, p, w.Offset)
		require.Equal(t, w.Value, g.Value, "%s: partition %d offset %d: value", who, p, w.Offset)
		require.Equal(t, len(w.Headers), len(g.Headers), "%s: partition %d offset %d: headers", who, p, w.Offset)
		for h := range w.Headers {
			require.Equal(t, w.Headers[h].Key, g.Headers[h].Key)
			require.Equal(t, w.Headers[h].Value, g.Headers[h].Value)
		}
	}
}

// proxyLogLevel is the proxies' log level in tests: warn, or
// PROXY_LOG_LEVEL (debug shows every tail starting and stopping).
func proxyLogLevel() zapcore.Level {
	if l, err := zapcore.ParseLevel(os.Getenv("PROXY_LOG_LEVEL")); err == nil && os.Getenv("PROXY_LOG_LEVEL") != "" {
		return l
	}
	return zapcore.WarnLevel
}

// groupState describes group; ok is false while it does not exist yet.
func groupState(cl *kgo.Client, group string) (kmsg.DescribeGroupsResponseGroup, bool) {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		return kmsg.DescribeGroupsResponseGroup{}, false
	}
	return resp.Groups[0], true
}

// dialProxy opens a raw connection to the proxy, for tests that need
// exact requests, pipelining, and control of the socket.
func dialProxy(t *testing.T, p *proxy.Server) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", p.Addr().String(), 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	return &rawConn{t: t, nc: nc, rd: bufio.NewReader(nc), fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("e2e-proxy"))}
}

// fetchAt is a consumer's sessionless fetch of one partition at offset.
func fetchAt(version int16, topic string, id [16]byte, partition int32, offset int64, maxWait time.Duration, minBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(version)
	req.ReplicaID, req.ReplicaState.ID = -1, -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(maxWait.Milliseconds()), minBytes, 50<<20
	req.SessionID, req.SessionEpoch = 0, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, offset, 1<<20
	rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
	req.Topics = []kmsg.FetchRequestTopic{rt}
	return req
}

// roundTrip sends req on c and reads its answer within timeout.
func (c *rawConn) roundTrip(req kmsg.Request, timeout time.Duration) kmsg.Response {
	c.t.Helper()
	corr := c.send(req)
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	require.Equal(c.t, corr, c.recv(resp, timeout), "answered in order")
	return resp
}

// onlyPartition returns the one partition of a fetch answer.
func onlyPartition(t testing.TB, resp kmsg.Response) kmsg.FetchResponseTopicPartition {
	t.Helper()
	m := resp.(*kmsg.FetchResponse)
	require.Zero(t, m.ErrorCode, "no fetch-level error")
	require.Len(t, m.Topics, 1)
	require.Len(t, m.Topics[0].Partitions, 1)
	return m.Topics[0].Partitions[0]
}

// batchesIn returns the headers of the whole batches in records.
func batchesIn(t testing.TB, records []byte) []kmsg.RecordBatch {
	t.Helper()
	var out []kmsg.RecordBatch
	for len(records) >= 12 {
		var b kmsg.RecordBatch
		n := 12 + int(binary.BigEndian.Uint32(records[8:12]))
		if n > len(records) {
			break
		}
		require.NoError(t, b.ReadFrom(records[:n]))
		out = append(out, b)
		records = records[n:]
	}
	return out
}
