package server

import (
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fetch sessions (KIP-227), served to the proxy's clients as Kafka's
// FetchManager and FetchSessionCache serve them (FetchSession.scala).
//
// A consumer fetching many partitions would name them all in every fetch
// and be answered on all of them, though most have nothing new. With a
// session, the proxy remembers what the client fetches: its first fetch
// (epoch 0) names every partition and opens a session, whose id the answer
// gives; each later fetch (epoch 1, 2, ...) names only the partitions it
// adds or whose fetch offset or limits changed, and those it drops
// (forgotten_topics_data), and is answered only on the partitions with
// something new: records, an error, a preferred read replica or a
// diverging epoch, or a high watermark, log start or last stable offset
// other than last answered. (Kafka compares the first two; the proxy the
// last stable offset too, which a read_committed client reads from its
// answers.) An idle consumer's long poll is then answered with no
// partition at all.
//
// A full fetch names the session it replaces, if any, which is closed:
// at epoch -1 it is answered without a session (session id 0), at epoch
// 0 a new one is opened for it when it is answered. An incremental fetch
// of a session the cache does not hold is answered
// FETCH_SESSION_ID_NOT_FOUND; one at an epoch other than the session's
// next, or sent again while the next one was served,
// INVALID_FETCH_SESSION_EPOCH; one by topic name (before v13) of a
// session by id (v13+) or the reverse, FETCH_SESSION_TOPIC_ID_ERROR. Each
// is answered at once, with no partition and session id 0: clients then
// open a new session. An incremental fetch that forgets every partition
// closes its session and is answered as a fetch without one.
//
// The fetch the proxy serves is the full one a session stands for: every
// partition of the session, in the session's order, at the offsets the
// client last gave. It is authorized, read (from the caches or upstream)
// and waits in the Fetch purgatory as any fetch: an incremental fetch
// waits on every partition of its session, not only those it names. Its
// answer is filtered through the session on the way back, after the
// authorization's denials are put in (they are errors: always answered).
// A partition answered with records moves to the end of the session's
// order, so that the partitions share max_bytes in turn.
//
// # The cache
//
// The proxy holds max.incremental.fetch.session.cache.slots sessions
// (1000; 0: none, every fetch is answered without one). A session is not
// tied to the connection that opened it (a client may go on with it on
// another); only the cache drops it. When the cache is full, a new session
// takes the slot of the least recently used one if it has not been used
// for min.incremental.fetch.session.eviction.ms (120000); else that of
// the smallest session created longer ago than that (as of its last use),
// if the new one has more partitions; else none is opened, and the fetch
// is answered with session id 0, which tells the client to go on with
// full fetches. Kafka divides its slots among 8 shards, a new session
// evicting within its own; the proxy keeps one, and considers every
// session. A follower's fetch opens no session (the proxy answers its
// partitions NOT_LEADER_OR_FOLLOWER), and neither does one before v7.
//
// Lock order: fetchSessions.mu, then a fetchSession's mu. Nothing takes
// the cache's lock while holding a session's.

// fetchSessions is the proxy's cache of its clients' fetch sessions.
type fetchSessions struct {
	slots      int              // immutable
	evictAfter time.Duration    // immutable
	now        func() time.Time // immutable (tests set it before use)

	evictions atomic.Int64 // sessions evicted for a new one

	mu   sync.Mutex // guards the following, and each session's use fields
	byID map[int32]*fetchSession
}

// fetchSession is one client's session.
type fetchSession struct {
	id      int32     // immutable
	byID    bool      // immutable: its fetches name topics by id (v13+)
	created time.Time // immutable

	// What the cache evicts by, set when the session is used (Kafka's
	// touch). Guarded by fetchSessions.mu.
	lastUsed  time.Time
	size      int  // its partitions, at its last use
	evictable bool // created longer than evictAfter before its last use

	mu    sync.Mutex // guards the following
	epoch int32      // the epoch its next incremental fetch must give
	parts map[fetchKey]*sessionPart
	seq   uint64 // the order the next partition added or moved takes
}

// fetchKey names a partition of a session: by topic id (v13+), or by
// name.
type fetchKey struct {
	id        [16]byte
	topic     string
	partition int32
}

// keyOf is the key of a topic's partition as a fetch of version v names
// it.
func keyOf(v int16, topic string, id [16]byte, partition int32) fetchKey {
	if v >= 13 {
		return fetchKey{id: id, partition: partition}
	}
	return fetchKey{topic: topic, partition: partition}
}

// sessionPart is a partition of a session (Kafka's CachedPartition): what
// the client asks of it, and what it was last answered.
type sessionPart struct {
	req               kmsg.FetchRequestTopicPartition
	seq               uint64 // its place in the session's order
	hw, lso, logStart int64  // last answered; -1 before the first answer
}

// nextEpoch is the epoch after epoch (Kafka's FetchMetadata.nextEpoch):
// it wraps to 1, never to 0, which opens a session.
func nextEpoch(epoch int32) int32 {
	switch {
	case epoch < 0:
		return -1
	case epoch == 1<<31-1:
		return 1
	}
	return epoch + 1
}

// newFetchSessions returns a cache of slots sessions, a session evictable
// after evictAfter unused.
func newFetchSessions(slots int, evictAfter time.Duration) *fetchSessions {
	return &fetchSessions{slots: slots, evictAfter: evictAfter, now: time.Now, byID: map[int32]*fetchSession{}}
}

// begin resolves req's session (Kafka's FetchManager.newContext). It
// returns the fetch to serve: req itself without a session, else the full
// fetch the session stands for (session id 0, epoch -1), and finish,
// which sets the answer's session id and filters the answer through the
// session (nil: answer as a fetch without one); or code, an error to
// answer at once instead, with no partition. replica marks a follower's
// fetch.
func (fs *fetchSessions) begin(req *kmsg.FetchRequest, replica bool) (full *kmsg.FetchRequest, finish func(*kmsg.FetchResponse), code int16) {
	if req.Version < 7 {
		return req, nil, 0
	}
	if req.SessionEpoch == 0 || req.SessionEpoch == -1 {
		if req.SessionID != 0 {
			fs.remove(req.SessionID) // a full fetch closes the session it names
		}
		if req.SessionEpoch == -1 || replica {
			return req, nil, 0
		}
		return req, func(resp *kmsg.FetchResponse) { fs.open(req, resp) }, 0
	}

	fs.mu.Lock()
	defer fs.mu.Unlock()
	s := fs.byID[req.SessionID]
	if s == nil {
		return nil, nil, kerr.FetchSessionIDNotFound.Code
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case req.SessionEpoch != s.epoch:
		return nil, nil, kerr.InvalidFetchSessionEpoch.Code
	case s.byID != (req.Version >= 13):
		return nil, nil, kerr.FetchSessionTopicIDError.Code
	}
	s.updateLocked(req)
	if len(s.parts) == 0 {
		// Nothing left: the session closes, and the fetch is served as
		// one without a session, on what it names.
		fs.removeLocked(s)
		q := *req
		q.SessionID, q.SessionEpoch, q.ForgottenTopics = 0, -1, nil
		return &q, nil, 0
	}
	fs.touchLocked(s)
	s.epoch = nextEpoch(s.epoch)
	expect := s.epoch
	return s.fullLocked(req), func(resp *kmsg.FetchResponse) { s.answered(resp, expect) }, 0
}

// open opens a session for req, a full fetch at epoch 0, with resp, its
// answer (Kafka's FullFetchContext): the session holds every partition
// answered, in the answer's order, at req's offsets. resp's session id is
// the new session's, or 0 when the cache has no room.
func (fs *fetchSessions) open(req *kmsg.FetchRequest, resp *kmsg.FetchResponse) {
	if resp.ErrorCode != 0 {
		return
	}
	asked := map[fetchKey]kmsg.FetchRequestTopicPartition{}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			asked[keyOf(req.Version, rt.Topic, rt.TopicID, rp.Partition)] = rp
		}
	}
	s := &fetchSession{byID: req.Version >= 13, epoch: 1, parts: map[fetchKey]*sessionPart{}}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			k := keyOf(req.Version, rt.Topic, rt.TopicID, rp.Partition)
			q, ok := asked[k]
			if !ok || s.parts[k] != nil {
				continue
			}
			s.parts[k] = &sessionPart{req: q, seq: s.seq, hw: rp.HighWatermark, lso: rp.LastStableOffset, logStart: rp.LogStartOffset}
			s.seq++
		}
	}
	now := fs.now()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if len(fs.byID) >= fs.slots && !fs.evictLocked(len(s.parts), now) {
		return // no room: the client goes on with full fetches
	}
	for {
		// A random positive id not in use: ids are not guessable in
		// sequence, and 0 means no session.
		if s.id = rand.Int32(); s.id != 0 && fs.byID[s.id] == nil {
			break
		}
	}
	s.created = now
	fs.byID[s.id] = s
	fs.touchLocked(s)
	resp.SessionID = s.id
}

// evictLocked makes room for a session of size partitions (Kafka's
// tryEvict, for a consumer's session): it evicts the least recently used
// session if it is stale, else the smallest evictable one if it is
// smaller than size; and reports whether it evicted one. O(sessions).
//
// REQUIRES: fs.mu held.
func (fs *fetchSessions) evictLocked(size int, now time.Time) bool {
	var lru, small *fetchSession
	for _, s := range fs.byID {
		if lru == nil || s.lastUsed.Before(lru.lastUsed) || (s.lastUsed.Equal(lru.lastUsed) && s.id < lru.id) {
			lru = s
		}
		if s.evictable && (small == nil || s.size < small.size || (s.size == small.size && s.id < small.id)) {
			small = s
		}
	}
	switch {
	case lru == nil:
		return false
	case now.Sub(lru.lastUsed) > fs.evictAfter:
		fs.removeLocked(lru)
	case small != nil && size > small.size:
		fs.removeLocked(small)
	default:
		return false
	}
	fs.evictions.Add(1)
	return true
}

// touchLocked records a use of s now (Kafka's touch): its last use, its
// size, and whether it is old enough to be evicted by a larger session.
//
// REQUIRES: fs.mu held, and s.mu held or s not yet shared.
func (fs *fetchSessions) touchLocked(s *fetchSession) {
	now := fs.now()
	s.lastUsed, s.size = now, len(s.parts)
	s.evictable = now.Sub(s.created) > fs.evictAfter
}

// remove drops session id from the cache, if it holds it.
func (fs *fetchSessions) remove(id int32) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if s := fs.byID[id]; s != nil {
		fs.removeLocked(s)
	}
}

// removeLocked drops s from the cache. A fetch of s still waiting is
// answered through it as if it were held (Kafka's too); the next fetch
// naming it is FETCH_SESSION_ID_NOT_FOUND.
//
// REQUIRES: fs.mu held.
func (fs *fetchSessions) removeLocked(s *fetchSession) {
	delete(fs.byID, s.id)
}

// len returns how many sessions the cache holds.
func (fs *fetchSessions) len() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return len(fs.byID)
}

// partitions returns how many partitions the cache's sessions hold, as of
// their last use.
func (fs *fetchSessions) partitions() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n := 0
	for _, s := range fs.byID {
		n += s.size
	}
	return n
}

// collectors are the cache's metrics, Kafka's NumIncrementalFetchSessions,
// NumIncrementalFetchPartitionsCached and
// IncrementalFetchSessionEvictionsPerSec.
func (fs *fetchSessions) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "proxy_fetch_sessions", Help: "Clients' fetch sessions (KIP-227) the proxy holds.",
		}, func() float64 { return float64(fs.len()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "proxy_fetch_session_partitions", Help: "Partitions of the fetch sessions the proxy holds.",
		}, func() float64 { return float64(fs.partitions()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "proxy_fetch_session_evictions_total", Help: "Fetch sessions evicted to make room for a new one.",
		}, func() float64 { return float64(fs.evictions.Load()) }),
	}
}

// updateLocked applies an incremental fetch to s (Kafka's
// FetchSession.update): a partition it names is added at the end of the
// session's order, or takes its new offset and limits; a forgotten one
// leaves.
//
// REQUIRES: s.mu held.
func (s *fetchSession) updateLocked(req *kmsg.FetchRequest) {
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			k := keyOf(req.Version, rt.Topic, rt.TopicID, rp.Partition)
			if p := s.parts[k]; p != nil {
				p.req = rp
				continue
			}
			s.parts[k] = &sessionPart{req: rp, seq: s.seq, hw: -1, lso: -1, logStart: -1}
			s.seq++
		}
	}
	for _, ft := range req.ForgottenTopics {
		for _, partition := range ft.Partitions {
			delete(s.parts, keyOf(req.Version, ft.Topic, ft.TopicID, partition))
		}
	}
}

// fullLocked returns the full fetch incremental req stands for: every
// partition of s in the session's order, grouped by topic as they come
// (a topic may come twice, as in Kafka's answers).
//
// REQUIRES: s.mu held.
func (s *fetchSession) fullLocked(req *kmsg.FetchRequest) *kmsg.FetchRequest {
	keys := make([]fetchKey, 0, len(s.parts))
	for k := range s.parts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b fetchKey) int {
		return cmpUint(s.parts[a].seq, s.parts[b].seq)
	})
	full := *req
	full.Topics, full.ForgottenTopics = nil, nil
	full.SessionID, full.SessionEpoch = 0, -1
	for _, k := range keys {
		n := len(full.Topics)
		if n == 0 || full.Topics[n-1].TopicID != k.id || full.Topics[n-1].Topic != k.topic {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = k.topic, k.id
			full.Topics = append(full.Topics, rt)
			n++
		}
		full.Topics[n-1].Partitions = append(full.Topics[n-1].Partitions, s.parts[k].req)
	}
	return &full
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// answered filters resp, the answer to the full fetch of an incremental
// one after which s's epoch became expect, down to the partitions with
// something new, and records what each was answered (Kafka's
// IncrementalFetchContext). If another fetch of s was served meanwhile,
// resp is INVALID_FETCH_SESSION_EPOCH instead, with no partition.
func (s *fetchSession) answered(resp *kmsg.FetchResponse, expect int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	resp.SessionID = s.id
	if s.epoch != expect {
		resp.ErrorCode, resp.Topics = kerr.InvalidFetchSessionEpoch.Code, nil
		return
	}
	if resp.ErrorCode != 0 {
		resp.Topics = nil
		return
	}
	topics := resp.Topics[:0]
	for _, rt := range resp.Topics {
		parts := rt.Partitions[:0]
		for _, rp := range rt.Partitions {
			p := s.parts[keyOf(resp.Version, rt.Topic, rt.TopicID, rp.Partition)]
			if p == nil || p.mustAnswer(&rp) {
				parts = append(parts, rp)
			}
			if p != nil && len(rp.RecordBatches) > 0 {
				p.seq = s.seq // to the end of the session's order
				s.seq++
			}
		}
		if len(parts) > 0 {
			rt.Partitions = parts
			topics = append(topics, rt)
		}
	}
	resp.Topics = topics
}

// mustAnswer reports whether a's partition is answered in an incremental
// answer, and records a (Kafka's maybeUpdateResponseData). An error is
// always answered, and clears the high watermark recorded, so that the
// partition is answered again once the error is gone.
func (p *sessionPart) mustAnswer(a *kmsg.FetchResponseTopicPartition) bool {
	must := len(a.RecordBatches) > 0 || a.PreferredReadReplica >= 0 ||
		a.DivergingEpoch.Epoch >= 0 ||
		a.HighWatermark != p.hw || a.LastStableOffset != p.lso || a.LogStartOffset != p.logStart
	p.hw, p.lso, p.logStart = a.HighWatermark, a.LastStableOffset, a.LogStartOffset
	if a.ErrorCode != 0 {
		p.hw = -1
		must = true
	}
	return must
}
