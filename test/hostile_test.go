package test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// These tests attack the broker as the hostile or careless
// clients did, each against the broker binary in a child process under
// limits (see process_helpers_test.go) where the attack, before its fix,
// would have taken the machine down with it, and check that the broker
// survives, within its budgets, and serves a real client afterwards.

// dialMany opens n connections to addr.
func dialMany(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	for range n {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		require.NoError(t, err)
		conns = append(conns, c)
	}
	return conns
}

// closedByBroker returns how many of conns the broker closes within wait:
// a read that ends in EOF or a reset, not in its own deadline.
func closedByBroker(conns []net.Conn, wait time.Duration) int {
	var closed atomic.Int32
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			_ = c.SetReadDeadline(time.Now().Add(wait))
			_, err := c.Read(make([]byte, 1))
			var ne net.Error
			if err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
				closed.Add(1)
			}
		})
	}
	wg.Wait()
	return int(closed.Load())
}

// roundTrip produces a record to a new topic and reads it back with a kgo
// client of addr, within 30s: the broker serves.
func roundTrip(t *testing.T, addr string) {
	t.Helper()
	topic := "alive-" + strings.ReplaceAll(t.Name(), "/", "-")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelWarn, nil)))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("alive")}).FirstErr())
	fetches := cl.PollRecords(ctx, 1)
	require.NoError(t, fetches.Err())
	require.Equal(t, "alive", string(fetches.Records()[0].Value))
}

// TestAcceptPastFileLimit: the broker exited on its first accept
// past RLIMIT_NOFILE ("accept4: too many open files"). Under a limit of 128
// file descriptors, max.connections derives from the limit (128 less a
// reserve of 64): connections past it are closed at once, and counted.
// Told to take more than it can hold, the broker hits the limit, backs off
// and goes on: it never exits, and serves once connections go.
func TestAcceptPastFileLimit(t *testing.T) {
	t.Run("max.connections derived from the limit", func(t *testing.T) {
		p := startBrokerProcess(t, limits{nofile: 128})
		require.Contains(t, p.output(), `"max.connections": 64`)
		conns := dialMany(t, p.addr, 150)
		assert.Equal(t, 150-64, closedByBroker(conns, 3*time.Second), "the connections past max.connections are closed at once")
		require.Contains(t, p.output(), `"reason": "max_connections"`)
		for _, c := range conns {
			_ = c.Close()
		}
		roundTrip(t, p.addr)
		require.False(t, p.hasExited())
	})
	t.Run("accepting past the limit backs off", func(t *testing.T) {
		p := startBrokerProcess(t, limits{nofile: 128}, "--max.connections", "100000")
		conns := dialMany(t, p.addr, 200) // the kernel queues what the broker cannot accept
		require.Eventually(t, func() bool { return strings.Contains(p.output(), `"reason": "accept_error"`) },
			20*time.Second, 10*time.Millisecond, "accept fails at the limit, and is logged")
		assert.Contains(t, p.output(), "too many open files")
		require.False(t, p.hasExited(), "the broker goes on:\n%s", p.output())
		for _, c := range conns {
			_ = c.Close()
		}
		roundTrip(t, p.addr)
		require.False(t, p.hasExited())
	})
}

// TestSlowlorisHeap: the broker allocated each request's buffer
// from its length prefix: 2,000 connections claiming 100 MB and sending 10
// bytes grew it to 24 GB. Here 500 such connections from one address,
// against a broker whose address space is limited to 3 GiB (it would have
// asked for 50 GB): its host's share of the budget
// (queued.max.request.bytes.per.ip, 256 MiB) admits two of the 100 MB
// requests, which cost their first 4 KiB chunk each, and the other 498
// wait unread, holding nothing; its heap stays under 64 MiB, and it
// serves meanwhile.
func TestSlowlorisHeap(t *testing.T) {
	p := startBrokerProcess(t, limits{asBytes: 3 << 30}, "--metrics.listener", "127.0.0.1:0")
	require.Eventually(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.metricsAddr != ""
	}, 10*time.Second, 10*time.Millisecond)
	const n = 500
	conns := dialMany(t, p.addr, n)
	for _, c := range conns {
		_, err := c.Write(append(binary.BigEndian.AppendUint32(nil, 100<<20), make([]byte, 10)...))
		require.NoError(t, err)
	}
	const admitted = (256 << 20) / (100 << 20)
	require.Eventually(t, func() bool {
		return p.metric("broker_queued_bytes") == admitted*4096 &&
			p.metric(`broker_readers_waiting{limit="queued.max.request.bytes.per.ip"}`) == n-admitted
	}, 20*time.Second, 50*time.Millisecond, "two requests hold their first chunk, no more; the rest wait unread")
	heap := p.metric("go_memstats_heap_alloc_bytes")
	assert.Less(t, heap, float64(64<<20), "the heap stays small: %.0f MiB", heap/(1<<20))
	roundTrip(t, p.addr)
	require.False(t, p.hasExited(), "%s", p.output())
}

// tagBomb returns a 33-byte frame: an ApiVersions v3 request whose body's
// tag section claims 2^32-1 tags in five bytes. kmsg v1.15.0 looped
// through them for 48 CPU-seconds after the bytes ran out.
func tagBomb() []byte {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("tag-bomb-client")).AppendRequest(nil, req, 1)
	frame = append(frame[:len(frame)-1], 0xff, 0xff, 0xff, 0xff, 0x0f) // the body's tag count
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	return frame
}

// TestTagCountBombCPU: four tag-count bombs (the held both cores
// for 107 s, and a healthy client's latency went from 0.02 to 0.6 s) cost
// the broker almost no CPU, measured from its process's CPU time, not
// wall time; their connections are closed, and a client is served.
func TestTagCountBombCPU(t *testing.T) {
	p := startBrokerProcess(t, limits{})
	require.Len(t, tagBomb(), 4+33, "a size, then 33 bytes")
	before := p.cpu()
	conns := dialMany(t, p.addr, 4)
	for _, c := range conns {
		_, err := c.Write(tagBomb())
		require.NoError(t, err)
	}
	assert.Equal(t, 4, closedByBroker(conns, 10*time.Second), "each bomb's connection is closed")
	start := time.Now()
	roundTrip(t, p.addr)
	t.Logf("a client served in %v after the bombs", time.Since(start))
	time.Sleep(time.Second) // an abandoned decode would burn this second on both cores
	used := p.cpu() - before
	assert.Less(t, used, time.Second, "the broker used %v of CPU", used)
}

// TestCleanShutdownCorruptionRefusesToStart: the broker took a
// flipped byte in the last batch of a segment, after a SIGTERM shutdown,
// for a torn tail and deleted the batch and 1,411 acknowledged records
// with it. A broker shut down cleanly records it; corruption found at the
// next start then stops it, naming the file, the position and the
// offset, and deletes nothing.
func TestCleanShutdownCorruptionRefusesToStart(t *testing.T) {
	dir := t.TempDir()
	p := startBrokerProcess(t, limits{}, "--log.dirs", dir)
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.addr), kgo.DefaultProduceTopic("acked"), kgo.AllowAutoTopicCreation(),
		kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelWarn, nil)))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 20 {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strings.Repeat("v", 100) + string(rune('a'+i)))}).FirstErr())
	}
	cl.Close()
	p.stop()
	require.FileExists(t, filepath.Join(dir, ".kafka_cleanshutdown"), "the clean shutdown is recorded")

	segs, err := filepath.Glob(filepath.Join(dir, "acked-0", "*.log"))
	require.NoError(t, err)
	sort.Strings(segs)
	seg := segs[len(segs)-1]
	data, err := os.ReadFile(seg)
	require.NoError(t, err)
	data[len(data)-1] ^= 0x10
	require.NoError(t, os.WriteFile(seg, data, 0o644))

	q := runBrokerProcess(t, limits{}, "--log.dirs", dir)
	state := q.wait()
	assert.False(t, state.Success(), "the broker refuses to start")
	out := q.output()
	assert.Contains(t, out, seg, "naming the file")
	assert.Regexp(t, `position \d+ \(offset 19\)`, out, "the position and the offset of the last batch")
	assert.Contains(t, out, "shut down cleanly")
	st, err := os.Stat(seg)
	require.NoError(t, err)
	assert.Equal(t, int64(len(data)), st.Size(), "nothing was cut")
}

// lyingBatch encodes a v2 batch of n records (count and last offset delta
// say n) whose records section is records, compressed with codec, its
// length and CRC-32C right: the header is well formed; only the records
// lie.
func lyingBatch(n int32, codec int16, records []byte) []byte {
	now := time.Now().UnixMilli() // retention keeps it
	b := kmsg.RecordBatch{Magic: 2, Attributes: codec, LastOffsetDelta: n - 1, FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: n, Records: records}
	b.Length = int32(49 + len(records))
	raw := b.AppendTo(nil)
	b.CRC = int32(crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b.AppendTo(raw[:0])
}

// valueRecords encodes records with the given values, offset deltas 0, 1...
func valueRecords(values ...string) []byte {
	var out []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte(v)}
		body := r.AppendTo(nil)[1:] // a zero length is one varint byte
		r.Length = int32(len(body))
		out = r.AppendTo(out)
	}
	return out
}

// gzipBomb returns one gzip stream of a record whose value is mebibytes
// MiB of zeros: its start in a first member, then a member of 1 MiB of
// zeros repeated. 900 make a batch of under a megabyte that inflates to
// 900 MiB.
func gzipBomb(t *testing.T, mebibytes int) []byte {
	t.Helper()
	member := func(data []byte) []byte {
		var buf bytes.Buffer
		w, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		require.NoError(t, err)
		_, err = w.Write(data)
		require.NoError(t, err)
		require.NoError(t, w.Close())
		return buf.Bytes()
	}
	size := int64(mebibytes) << 20
	fields := []byte{0}                        // attributes
	fields = binary.AppendVarint(fields, 0)    // timestamp delta
	fields = binary.AppendVarint(fields, 0)    // offset delta
	fields = binary.AppendVarint(fields, -1)   // no key
	fields = binary.AppendVarint(fields, size) // the value's length
	start := append(binary.AppendVarint(nil, int64(len(fields))+size+1), fields...)
	return append(member(start), bytes.Repeat(member(make([]byte, 1<<20)), mebibytes)...)
}

// TestLyingBatchesRefused: each batch the broker stored and served
// is refused with Kafka's code, nothing is appended, and a consumer reads
// the good records around them.
func TestLyingBatchesRefused(t *testing.T) {
	srv := startBroker(t)
	cl := newClient(t, srv, kgo.ConsumeTopics("lies"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	createTopic(t, cl, "lies", 1)
	id := topicID(t, cl, "lies")
	gzipCompressor, err := kgo.DefaultCompressor(kgo.GzipCompression())
	require.NoError(t, err)
	compress := func(records []byte) []byte {
		out, _ := gzipCompressor.Compress(new(bytes.Buffer), records)
		return bytes.Clone(out)
	}
	bomb := gzipBomb(t, 900)
	require.Less(t, len(bomb), 1000<<10)
	tests := []struct {
		name  string
		batch []byte
		want  *kerr.Error
	}{
		{"compressed garbage", lyingBatch(1, 1, bytes.Repeat([]byte("garbage!"), 100)), kerr.CorruptMessage},
		{"a count 1,000 over one record", lyingBatch(1000, 0, valueRecords("one")), kerr.InvalidRecord},
		{"a count 2^31-1 over one record", lyingBatch(1<<31-1, 0, valueRecords("one")), kerr.InvalidRecord},
		{"a count of 1 over three records", lyingBatch(1, 0, valueRecords("a", "b", "c")), kerr.InvalidRecord},
		{"a count of 1 over three compressed records", lyingBatch(1, 1, compress(valueRecords("a", "b", "c"))), kerr.InvalidRecord},
		{"a gzip bomb: 900 MiB in a batch under 1 MB", lyingBatch(1, 1, bomb), kerr.MessageTooLarge},
	}
	good := func(v string) {
		t.Helper()
		sp := produceBatch(t, cl, id, "lies", 0, lyingBatch(1, 1, compress(valueRecords(v))))
		require.Equal(t, int16(0), sp.ErrorCode, "%v", kerr.ErrorForCode(sp.ErrorCode))
	}
	good("before")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sp := produceBatch(t, cl, id, "lies", 0, tt.batch)
			assert.Equal(t, tt.want.Code, sp.ErrorCode, "got %v: %v", kerr.ErrorForCode(sp.ErrorCode), sp.ErrorMessage)
		})
	}
	good("after")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []string
	for len(got) < 2 {
		fetches := cl.PollFetches(ctx)
		require.NoError(t, fetches.Err())
		fetches.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	assert.Equal(t, []string{"before", "after"}, got, "only the good batches were appended, at offsets 0 and 1")
}

// TestLogDirWithinFileLimit: the broker accepted a topic of 9,980
// partitions with log.dirs, and small segments filled by ordinary produce,
// each holding a file descriptor, until it died at RLIMIT_NOFILE, and
// again at every restart, recovery reopening them all. Under a limit of
// 512, a topic past what the limit leaves the logs is refused
// (POLICY_VIOLATION); hundreds of sealed segments hold no more files than
// the cache allows; and the broker restarts on its log dir under the same
// limit, and serves.
func TestLogDirWithinFileLimit(t *testing.T) {
	dir := t.TempDir()
	lim := limits{nofile: 512}
	args := []string{"--log.dirs", dir, "--log.segment.bytes", "1024"}
	p := startBrokerProcess(t, lim, args...)
	// 512 - 64 reserved: 224 connections, 224 files for the logs, 56 of
	// them for sealed segments, two for each partition: 84 partitions.
	require.Contains(t, p.output(), `"max.broker.partitions": 84`)

	cl, err := kgo.NewClient(kgo.SeedBrokers(p.addr), kgo.DefaultProduceTopic("small-segments"), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelWarn, nil)))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	create := func(topic string, partitions int32) kmsg.CreateTopicsResponseTopic {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 1
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		return resp.Topics[0]
	}
	refused := create("too-many", 100)
	assert.Equal(t, kerr.PolicyViolation.Code, refused.ErrorCode, "%v", kerr.ErrorForCode(refused.ErrorCode))
	require.NotNil(t, refused.ErrorMessage)
	assert.Contains(t, *refused.ErrorMessage, "max.broker.partitions")
	require.Equal(t, int16(0), create("small-segments", 1).ErrorCode)

	value := []byte(strings.Repeat("v", 900))
	for range 500 { // a segment each: more than the limit, were each held open
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr())
	}
	segs, err := filepath.Glob(filepath.Join(dir, "small-segments-0", "*.log"))
	require.NoError(t, err)
	require.Greater(t, len(segs), 450, "hundreds of segments")
	fds, err := os.ReadDir("/proc/" + itoa(p.cmd.Process.Pid) + "/fd")
	require.NoError(t, err)
	assert.Less(t, len(fds), 512-64, "the broker holds fewer files than its budget")
	cl.Close()
	p.stop()

	q := startBrokerProcess(t, lim, args...)
	roundTrip(t, q.addr)
	require.False(t, q.hasExited())
}

func itoa(i int) string { return strconv.Itoa(i) }
