package server

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/replica"
)

// Fetch sessions (KIP-227, Kafka's FetchSessionCache and
// FetchManager).
//
// A consumer fetching many partitions sends them all in every fetch, and
// is answered on all of them, though most have nothing new. With a
// session, the broker remembers what the client fetches: the client's
// first fetch (session epoch 0) names every partition and opens a
// session, whose id the answer gives; each later fetch (epoch 1, 2, ...)
// names only the partitions whose fetch offset or limits changed, or to
// add, and the ones to drop (forgotten_topics_data), and is answered only
// on the partitions with something new: records, an error, a high
// watermark, last stable offset or log start other than last answered.
// An idle consumer's long poll is then answered with no partition at
// all. Epoch -1 closes the session (a full fetch without one); epoch 0
// with a session id replaces it.
//
// The cache holds max.incremental.fetch.session.cache.slots sessions
// (1000). When it is full, a new session takes the slot of the one least
// recently used if that one has been idle for
// min.incremental.fetch.session.eviction.ms (120000), else none is made
// and the fetch is answered with session id 0, which tells the client to
// go on with full fetches. An incremental fetch of a session the cache
// does not hold is FETCH_SESSION_ID_NOT_FOUND, one at another epoch than
// the session's next INVALID_FETCH_SESSION_EPOCH; clients then start a
// new session.
//
// A session names topics as its fetches do: by name before v13, by id
// from v13. The fetch itself is the full one the session stands for,
// built here and read by package replica as any other (long polling
// included: it waits on every partition of the session); its answer is
// filtered on the way back.

// fetchSessions is the broker's cache of sessions. Lock order: its mutex,
// then a session's (open looks at every session's last use); nothing
// takes the cache's while holding a session's.
type fetchSessions struct {
	slots      int
	evictAfter time.Duration
	now        func() time.Time // immutable

	mu   sync.Mutex
	byID map[int32]*fetchSession
}

// fetchSession is one client's session.
type fetchSession struct {
	id int32 // immutable

	mu       sync.Mutex // guards the following
	epoch    int32      // the epoch the next incremental fetch must give
	parts    map[sessionKey]*sessionPart
	order    []sessionKey // the partitions in the order they were added
	lastUsed time.Time
	closed   bool // dropped from the cache: its next fetch is not found
}

// sessionKey names a partition of a session: by topic id (v13+) or by
// name.
type sessionKey struct {
	id        [16]byte
	topic     string
	partition int32
}

// keyOf is the session key of a topic's partition as a fetch of version v
// names it: by id from v13, else by name.
func keyOf(v int16, topic string, id [16]byte, partition int32) sessionKey {
	if v >= 13 {
		return sessionKey{id: id, partition: partition}
	}
	return sessionKey{topic: topic, partition: partition}
}

// sessionPart is a partition of a session: what the client asks of it,
// and what it was last answered.
type sessionPart struct {
	req               kmsg.FetchRequestTopicPartition
	hw, lso, logStart int64 // last answered
	answered          bool  // hw, lso and logStart hold an answer
}

func newFetchSessions(slots int, evictAfter time.Duration) *fetchSessions {
	return &fetchSessions{slots: slots, evictAfter: evictAfter, now: time.Now, byID: make(map[int32]*fetchSession)}
}

// begin resolves req's session: it returns the full fetch to read (req
// itself when there is no session), the session the answer is filtered
// and recorded through (nil: none), and a top-level error to answer at
// once instead (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH).
// A follower's fetch, and one before v7, have no session.
func (fs *fetchSessions) begin(req *kmsg.FetchRequest, follower bool) (*kmsg.FetchRequest, *fetchSession, int16) {
	if req.Version < 7 || fs.slots <= 0 {
		return req, nil, 0
	}
	switch {
	case req.SessionEpoch == -1: // a full fetch without a session: close the one named
		fs.close(req.SessionID)
		return req, nil, 0
	case req.SessionEpoch == 0: // a full fetch opening a session, replacing the one named
		fs.close(req.SessionID)
		if follower {
			return req, nil, 0 // this broker's own followers send full fetches
		}
		s := fs.open()
		if s == nil {
			return req, nil, 0 // no room: the client goes on with full fetches
		}
		s.mu.Lock()
		s.update(req)
		s.mu.Unlock()
		return req, s, 0
	}
	fs.mu.Lock()
	s := fs.byID[req.SessionID]
	fs.mu.Unlock()
	if s == nil {
		return nil, nil, kerr.FetchSessionIDNotFound.Code
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, nil, kerr.FetchSessionIDNotFound.Code
	case req.SessionEpoch != s.epoch:
		return nil, nil, kerr.InvalidFetchSessionEpoch.Code
	}
	s.update(req)
	s.epoch++
	s.lastUsed = fs.now()
	return s.fullLocked(req), s, 0
}

// open makes a session, evicting the least recently used one idle long
// enough when the cache is full; nil when there is no room.
func (fs *fetchSessions) open() *fetchSession {
	now := fs.now()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if len(fs.byID) >= fs.slots {
		var lru *fetchSession
		for _, s := range fs.byID {
			s.mu.Lock()
			if lru == nil || s.lastUsed.Before(lru.lastUsed) {
				lru = s
			}
			s.mu.Unlock()
		}
		lru.mu.Lock()
		idle := now.Sub(lru.lastUsed) >= fs.evictAfter
		if idle {
			lru.closed = true
		}
		lru.mu.Unlock()
		if !idle {
			return nil
		}
		delete(fs.byID, lru.id)
	}
	s := &fetchSession{epoch: 1, parts: make(map[sessionKey]*sessionPart), lastUsed: now}
	for {
		// A random positive id, not one in use: ids are not guessable
		// in sequence, and 0 means no session.
		if s.id = rand.Int32(); s.id != 0 && fs.byID[s.id] == nil {
			break
		}
	}
	fs.byID[s.id] = s
	return s
}

// close drops session id from the cache, if held.
func (fs *fetchSessions) close(id int32) {
	if id == 0 {
		return
	}
	fs.mu.Lock()
	s := fs.byID[id]
	delete(fs.byID, id)
	fs.mu.Unlock()
	if s != nil {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
	}
}

// len returns how many sessions the cache holds.
func (fs *fetchSessions) len() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return len(fs.byID)
}

// update applies a fetch of the session: the partitions it names are
// added or take its new fetch state, the forgotten ones leave.
//
// REQUIRES: s.mu held.
func (s *fetchSession) update(req *kmsg.FetchRequest) {
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			k := keyOf(req.Version, rt.Topic, rt.TopicID, rp.Partition)
			if p := s.parts[k]; p != nil {
				p.req = rp
				continue
			}
			s.parts[k] = &sessionPart{req: rp}
			s.order = append(s.order, k)
		}
	}
	for _, ft := range req.ForgottenTopics {
		for _, partition := range ft.Partitions {
			delete(s.parts, keyOf(req.Version, ft.Topic, ft.TopicID, partition))
		}
	}
	if len(req.ForgottenTopics) > 0 {
		order := s.order[:0]
		for _, k := range s.order {
			if s.parts[k] != nil {
				order = append(order, k)
			}
		}
		s.order = order
	}
}

// fullLocked returns the full fetch incremental req stands for: every
// partition of the session, in the order they were added, grouped by
// topic as they come.
//
// REQUIRES: s.mu held.
func (s *fetchSession) fullLocked(req *kmsg.FetchRequest) *kmsg.FetchRequest {
	full := *req
	full.Topics, full.ForgottenTopics = nil, nil
	full.SessionID, full.SessionEpoch = 0, -1
	for _, k := range s.order {
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

// answered filters resp, the answer to the session's fetch, and records
// what each partition was answered. A full fetch (it opened the session)
// keeps every partition; an incremental one only those with something
// new.
func (s *fetchSession) answered(resp *kmsg.FetchResponse, full bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	resp.SessionID = s.id
	topics := resp.Topics[:0]
	for _, rt := range resp.Topics {
		parts := rt.Partitions[:0]
		for _, rp := range rt.Partitions {
			p := s.parts[keyOf(resp.Version, rt.Topic, rt.TopicID, rp.Partition)]
			changed := p == nil || !p.answered || len(rp.RecordBatches) > 0 || rp.ErrorCode != 0 ||
				rp.HighWatermark != p.hw || rp.LastStableOffset != p.lso || rp.LogStartOffset != p.logStart
			if p != nil {
				p.hw, p.lso, p.logStart, p.answered = rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset, true
			}
			if full || changed {
				parts = append(parts, rp)
			}
		}
		if len(parts) > 0 {
			rt.Partitions = parts
			topics = append(topics, rt)
		}
	}
	resp.Topics = topics
}

// sessionResponder answers a fetch of a session through its session's
// filter.
type sessionResponder struct {
	replica.Responder
	s    *fetchSession
	full bool
}

func (r sessionResponder) Respond(resp kmsg.Response) {
	r.filter(resp)
	r.Responder.Respond(resp)
}

func (r sessionResponder) RespondHolding(resp kmsg.Response, n int) {
	r.filter(resp) // never drops records: n stands
	r.Responder.RespondHolding(resp, n)
}

func (r sessionResponder) filter(resp kmsg.Response) {
	if fr, ok := resp.(*kmsg.FetchResponse); ok && fr.ErrorCode == 0 {
		r.s.answered(fr, r.full)
	}
}
