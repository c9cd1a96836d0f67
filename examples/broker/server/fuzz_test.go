package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// fuzzTopic is the topic every fuzz input can find: seeds produce to it and
// fetch from it.
const fuzzTopic = "fuzz"

// FuzzRequest feeds arbitrary bytes to the broker as the body of a request
// frame, down the path the connection's reader takes: parse, take a place
// in the response order, run the handler. Whatever the bytes:
//
//   - nothing panics (the handler is called directly, not through
//     dispatch's recover, so a panic fails the input);
//   - nothing blocks: handlers run on the reader's goroutine;
//   - a request that parses is answered, at once or, if it waits in a
//     purgatory, when its connection closes;
//   - the broker goes on serving: a produce and a fetch on the fuzz topic,
//     and a metadata request for everything, are answered afterwards.
//
// The seeds (run by go test) are valid requests of every API the data path
// serves, each reaching the partitions, and some malformed ones.
func FuzzRequest(f *testing.F) {
	for _, seed := range fuzzSeeds() {
		f.Add(seed)
	}
	s := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) < 8 || len(body) > int(s.cfg.SocketRequestMaxBytes) {
			return // the reader refuses the frame from its size
		}
		tc := newTestConn(t, s)
		r, err := tc.rec.Parse(body)
		if err != nil {
			return // the reader closes the connection
		}
		apis.Lookup(r.Msg.Key()).Handler(s, r)
		tc.rec.Close() // answers what still waits
		_, answered := tc.answer(r)
		require.True(t, answered, "%s v%d was never answered", kmsg.NameForKey(r.Msg.Key()), r.Msg.GetVersion())
		resetFuzzServer(t, s)
		stillServing(t, s)
	})
}

// newFuzzServer starts a broker for a fuzz run, with a small retention so
// that the fuzz topic's log stays small however many inputs produce to it.
func newFuzzServer(f *testing.F) *Server {
	cfg := Default()
	cfg.Listener = "127.0.0.1:0"
	cfg.LogRetentionBytes = 1 << 20
	s, err := New(cfg, nil)
	require.NoError(f, err)
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(f, s.Close(ctx))
		require.NoError(f, <-served)
	})
	createTopic(f, s, fuzzTopic, 2)
	return s
}

// resetFuzzServer deletes the topics an input created, so that memory
// stays bounded over a long run, and puts the fuzz topic back if an input
// deleted it.
func resetFuzzServer(t *testing.T, s *Server) {
	for _, topic := range s.data.store.Topics() {
		if topic.Name != fuzzTopic {
			deleteTopic(t, s, topic.Name)
		}
	}
	if _, err := s.data.store.Topic(fuzzTopic); err != nil {
		createTopic(t, s, fuzzTopic, 2)
	}
}

// stillServing checks that a produce, a fetch and a metadata request are
// answered as usual.
func stillServing(t *testing.T, s *Server) {
	tc := newTestConn(t, s)
	produce := tc.request(produceRequest(9, 1, fuzzTopic, 0, batchtest.Values(nowMs(), "alive")))
	s.handleProduce(produce)
	sp := produced(t, tc.await(produce))
	require.Equal(t, int16(0), sp.ErrorCode)

	topic, err := s.data.store.Topic(fuzzTopic)
	require.NoError(t, err)
	fetch := tc.request(fetchRequest(12, time.Minute, 1, fetchFrom{topic, 0, sp.BaseOffset}))
	s.handleFetch(fetch)
	parts := fetched(t, tc.await(fetch))
	require.Equal(t, []string{"alive"}, values(t, parts[0]))

	meta := tc.request(metadataRequest(12))
	s.handleMetadata(meta)
	resp := tc.await(meta).(*kmsg.MetadataResponse)
	assert.Len(t, resp.Topics, 1)
}

// fuzzSeeds returns request bodies (frames without their size) of every
// API the data path serves, and a few broken ones.
func fuzzSeeds() [][]byte {
	body := func(req kmsg.Request) []byte {
		return kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz")).AppendRequest(nil, req, 1)[4:]
	}
	seeds := [][]byte{
		body(kmsg.NewPtrApiVersionsRequest()),
		body(metadataRequest(12, fuzzTopic, "auto-created")),
		body(metadataRequest(0)),
		body(createTopicsRequest(7, newTopic("created", 3, 1))),
		body(produceRequest(9, 1, fuzzTopic, 0, batchtest.Values(nowMs(), "a", "b"))),
		body(produceRequest(13, -1, fuzzTopic, 1, batchtest.Idempotent(1, 0, 0, nowMs(), "c"))),
		body(produceRequest(3, 0, "missing", 0, batchtest.Values(nowMs(), "d"))),
		body(listOffsetsRequest(7, fuzzTopic, 0, -3)),
		body(offsetForLeaderEpochRequest(4, fuzzTopic, epochQuery{0, 0, 0}, epochQuery{1, -1, 5})),
		body(kmsg.NewPtrInitProducerIDRequest()),
		{0, 0, 0, 0, 0, 0, 0, 0},
		{0, 1, 0, 12, 0, 0, 0, 1, 0xff, 0xff, 0, 0x7f, 0x7f, 0x7f},
		// Found by fuzzing: a fetch header claiming ~800 million tagged
		// fields, which kmsg.SkipTags spun through for seconds.
		[]byte("\x00\x01\x00\f\xff\x00\x00\x00\x00\x00\xff\xff\xff\xff\x02\x05fuzz\x02\x00\x00\x00\x00\xff\xff\xff\xff" +
			"\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x00\x10\x00\x00\x00\x00\x01\x01\x00"),
	}
	for _, v := range []int16{4, 12, 13, 18} {
		// By name; from v13 by a zero topic id, which no topic has.
		seeds = append(seeds, body(fetchRequest(v, time.Minute, 1, fetchFrom{&storage.Topic{Name: fuzzTopic}, 0, 0})))
	}
	describe := kmsg.NewPtrDescribeConfigsRequest()
	describe.SetVersion(4)
	for _, r := range []struct {
		typ  kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeTopic, fuzzTopic}, {kmsg.ConfigResourceTypeBroker, "1"}} {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = r.typ, r.name
		describe.Resources = append(describe.Resources, rr)
	}
	seeds = append(seeds, body(describe))
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.SetVersion(5)
	del.TopicNames = []string{fuzzTopic}
	seeds = append(seeds, body(del))
	return seeds
}
