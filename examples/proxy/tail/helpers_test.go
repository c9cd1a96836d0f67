package tail

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/proxy/upstream"
)

// leader is a Kafka broker reduced to what a tail needs, over real TCP
// with kmsg: ApiVersions, Metadata (one topic, "t", led by broker 1: this
// one), and Fetch, which answers with the batches a test appended, or
// waits for them up to max_wait_ms. A test may make it answer a
// partition with an error, or drop its connections.
type leader struct {
	t          *testing.T
	ln         net.Listener
	partitions int32

	mu      sync.Mutex // guards the following
	logs    map[int32][][]byte
	errs    map[int32]int16
	fetches []*kmsg.FetchRequest
	conns   []net.Conn
	done    chan struct{}
}

func newLeader(t *testing.T, partitions int32) *leader {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := &leader{t: t, ln: ln, partitions: partitions, logs: map[int32][][]byte{}, errs: map[int32]int16{}, done: make(chan struct{})}
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
	t.Cleanup(func() { _ = ln.Close(); l.dropConnections(); <-l.done })
	return l
}

// append adds a one-record batch to partition.
func (l *leader) append(partition int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	off := int64(len(l.logs[partition]))
	l.logs[partition] = append(l.logs[partition], batchAt(off))
}

func (l *leader) fail(partition int32, code int16) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs[partition] = code
}

func (l *leader) dropConnections() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		_ = c.Close()
	}
}

func (l *leader) fetchRequests() []*kmsg.FetchRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*kmsg.FetchRequest(nil), l.fetches...)
}

func (l *leader) serve(nc net.Conn) {
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

func (l *leader) answer(req kmsg.Request) kmsg.Response {
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
		l.mu.Lock()
		l.fetches = append(l.fetches, r)
		l.mu.Unlock()
		deadline := time.Now().Add(time.Duration(r.MaxWaitMillis) * time.Millisecond)
		for {
			resp, n := l.read(r)
			if n > 0 || time.Now().After(deadline) {
				return resp
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	panic("unexpected request " + kmsg.NameForKey(req.Key()))
}

// read answers a fetch with what the logs hold now, and how many
// partitions had something to say (data or an error).
func (l *leader) read(r *kmsg.FetchRequest) (*kmsg.FetchResponse, int) {
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
			if code := l.errs[rp.Partition]; code != 0 {
				sp.ErrorCode = code
				n++
			} else {
				for _, b := range log[min(int(rp.FetchOffset), len(log)):] {
					sp.RecordBatches = append(sp.RecordBatches, b...)
				}
				if len(sp.RecordBatches) > 0 {
					n++
				}
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

// notes records the partitions notify was called for: for a change of
// their cache, or for their tail stopping (the manager no longer has it).
type notes struct {
	m *Manager // set before any Start

	mu      sync.Mutex
	changed map[TP]int
	stopped map[TP]int
}

func (n *notes) notify(tp TP) {
	stopped := n.m.Get(tp) == nil
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.changed == nil {
		n.changed, n.stopped = map[TP]int{}, map[TP]int{}
	}
	if stopped {
		n.stopped[tp]++
	} else {
		n.changed[tp]++
	}
}

func (n *notes) changes(tp TP) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.changed[tp]
}

func (n *notes) stops(tp TP) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stopped[tp]
}

// newTestManager returns a manager tailing from l, whose metadata knows
// the topic, closed (with its cluster) when the test ends.
func newTestManager(t *testing.T, l *leader, n *notes, opts ...Option) *Manager {
	t.Helper()
	cl, err := upstream.New(upstream.WithSeeds(l.ln.Addr().String()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	require.Eventually(t, func() bool { _, _, ok := cl.Leader("t", 0); return ok }, 10*time.Second, time.Millisecond)
	m, err := New(cl, n.notify, append([]Option{WithFetch(50*time.Millisecond, 1<<20, 1<<20)}, opts...)...)
	require.NoError(t, err)
	n.m = m
	t.Cleanup(m.Close)
	return m
}

// withNow sets the clock the idle time is read from.
func withNow(now func() time.Time) Option { return optionFunc(func(c *config) { c.now = now }) }

// fakeNow is a clock the test moves: it starts at a fixed time and moves
// only by advance.
type fakeNow struct{ ns atomic.Int64 }

func (c *fakeNow) now() time.Time { return time.Unix(1e9, c.ns.Load()) }

func (c *fakeNow) advance(d time.Duration) { c.ns.Add(int64(d)) }
