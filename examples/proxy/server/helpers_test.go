package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap/zaptest"
)

// fakeLeader is an upstream broker reduced to what the proxy's fetch
// needs, over real TCP with kmsg: ApiVersions, Metadata (one topic, "t",
// of partitions led by broker 1: this one), and Fetch up to v12, which
// answers with the batches a test appended, or waits for them up to
// max_wait_ms (checking every few milliseconds: the wait of a broker
// with nothing to say, not a verdict).
type fakeLeader struct {
	t          *testing.T
	ln         net.Listener
	partitions int32

	mu    sync.Mutex // guards the following
	logs  map[int32][][]byte
	conns []net.Conn
	done  chan struct{}
}

func newFakeLeader(t *testing.T, partitions int32) *fakeLeader {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := &fakeLeader{t: t, ln: ln, partitions: partitions, logs: map[int32][][]byte{}, done: make(chan struct{})}
	var wg sync.WaitGroup
	go func() {
		defer close(l.done)
		for {
			nc, err := ln.Accept()
			if err != nil {
				wg.Wait()
				return
			}
			l.mu.Lock()
			l.conns = append(l.conns, nc)
			l.mu.Unlock()
			wg.Add(1)
			go func() { defer wg.Done(); l.serve(nc) }()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		l.mu.Lock()
		for _, c := range l.conns {
			_ = c.Close()
		}
		l.mu.Unlock()
		<-l.done
	})
	return l
}

// append adds a one-record batch to partition.
func (l *fakeLeader) append(partition int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	off := int64(len(l.logs[partition]))
	l.logs[partition] = append(l.logs[partition], batchAt(off))
}

func (l *fakeLeader) serve(nc net.Conn) {
	defer nc.Close()
	br := bufio.NewReader(nc)
	for {
		var size [4]byte
		if _, err := io.ReadFull(br, size[:]); err != nil {
			return
		}
		body := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(br, body); err != nil {
			return
		}
		rd := kbin.Reader{Src: body}
		key, version, corr := rd.Int16(), rd.Int16(), rd.Int32()
		rd.NullableString()
		req := kmsg.RequestForKey(key)
		req.SetVersion(version)
		if req.IsFlexible() {
			kmsg.SkipTags(&rd)
		}
		if err := req.ReadFrom(rd.Src); err != nil {
			return
		}
		resp := l.answer(req)
		resp.SetVersion(version)
		out := kbin.AppendInt32(nil, 0)
		out = kbin.AppendInt32(out, corr)
		if resp.IsFlexible() && kmsg.Key(key) != kmsg.ApiVersions {
			out = append(out, 0)
		}
		out = resp.AppendTo(out)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		if _, err := nc.Write(out); err != nil {
			return
		}
	}
}

func (l *fakeLeader) answer(req kmsg.Request) kmsg.Response {
	switch r := req.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := r.ResponseKind().(*kmsg.ApiVersionsResponse)
		for _, k := range [][3]int16{{int16(kmsg.ApiVersions), 0, 3}, {int16(kmsg.Metadata), 0, 12}, {int16(kmsg.Fetch), 4, 12}} {
			resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k[0], MinVersion: k[1], MaxVersion: k[2]})
		}
		return resp
	case *kmsg.MetadataRequest:
		resp := r.ResponseKind().(*kmsg.MetadataResponse)
		host, port, _ := net.SplitHostPort(l.ln.Addr().String())
		p, _ := strconv.Atoi(port)
		resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 1, Host: host, Port: int32(p)}}
		resp.ControllerID = 1
		topic := "t"
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic, rt.TopicID = &topic, [16]byte{7}
		for i := range l.partitions {
			rp := kmsg.NewMetadataResponseTopicPartition()
			rp.Partition, rp.Leader, rp.LeaderEpoch = i, 1, 0
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = []kmsg.MetadataResponseTopic{rt}
		return resp
	case *kmsg.FetchRequest:
		deadline := time.Now().Add(time.Duration(r.MaxWaitMillis) * time.Millisecond)
		for {
			resp, n := l.read(r)
			if n > 0 || !time.Now().Before(deadline) {
				return resp
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	panic("unexpected request " + kmsg.NameForKey(req.Key()))
}

// read answers a fetch with what the logs hold now, and how many
// partitions had records.
func (l *fakeLeader) read(r *kmsg.FetchRequest) (*kmsg.FetchResponse, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	resp := r.ResponseKind().(*kmsg.FetchResponse)
	n := 0
	for _, rt := range r.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			log := l.logs[rp.Partition]
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = int64(len(log)), int64(len(log)), 0
			for _, b := range log[min(int(rp.FetchOffset), len(log)):] {
				sp.RecordBatches = append(sp.RecordBatches, b...)
			}
			if len(sp.RecordBatches) > 0 {
				n++
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, n
}

// batchAt is a valid v2 batch of one record at offset.
func batchAt(offset int64) []byte {
	rec := kmsg.Record{Value: []byte("v" + strconv.FormatInt(offset, 10))}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	recs := rec.AppendTo(nil)
	rb := kmsg.RecordBatch{FirstOffset: offset, Length: int32(49 + len(recs)), Magic: 2, ProducerID: -1,
		ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1, Records: recs}
	return rb.AppendTo(nil)
}

// newTestProxy starts a proxy in front of l, on a free loopback port,
// closed when the test ends; it returns once the proxy's metadata knows
// l's topic.
func newTestProxy(t *testing.T, l *fakeLeader, tweak ...func(*Config)) *Server {
	t.Helper()
	cfg := Default()
	cfg.Upstream, cfg.Listener = l.ln.Addr().String(), "127.0.0.1:0"
	cfg.TailFetchMaxWait = 50 * time.Millisecond
	for _, f := range tweak {
		f(&cfg)
	}
	s, err := New(cfg, zaptest.NewLogger(t))
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, s.Close(ctx))
		require.NoError(t, <-served)
	})
	require.Eventually(t, func() bool { _, _, ok := s.cl.Leader("t", 0); return ok }, 10*time.Second, time.Millisecond)
	return s
}

// testClient is a raw client connection to the proxy, for exact
// requests.
type testClient struct {
	t    *testing.T
	nc   net.Conn
	rd   *bufio.Reader
	corr int32
	fmt  *kmsg.RequestFormatter
}

func dialTestProxy(t *testing.T, s *Server) *testClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", s.Addr().String(), 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	return &testClient{t: t, nc: nc, rd: bufio.NewReader(nc), fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("test"))}
}

// roundTrip sends req and reads its answer within timeout.
func (c *testClient) roundTrip(req kmsg.Request, timeout time.Duration) kmsg.Response {
	c.t.Helper()
	c.send(req)
	return c.recv(req, timeout)
}

// send writes req.
func (c *testClient) send(req kmsg.Request) {
	c.t.Helper()
	c.corr++
	_ = c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := c.nc.Write(c.fmt.AppendRequest(nil, req, c.corr))
	require.NoError(c.t, err)
}

// recv reads the answer to req, the last request sent, within timeout.
func (c *testClient) recv(req kmsg.Request, timeout time.Duration) kmsg.Response {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(timeout))
	var size [4]byte
	_, err := io.ReadFull(c.rd, size[:])
	require.NoError(c.t, err)
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err = io.ReadFull(c.rd, buf)
	require.NoError(c.t, err)
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	rd := kbin.Reader{Src: buf}
	require.Equal(c.t, c.corr, rd.Int32())
	if resp.IsFlexible() {
		kmsg.SkipTags(&rd)
	}
	require.NoError(c.t, rd.Complete())
	require.NoError(c.t, resp.ReadFrom(rd.Src))
	return resp
}
