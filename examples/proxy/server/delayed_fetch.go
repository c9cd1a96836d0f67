package server

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/proxy/cache"
	"github.com/gopurgatory/purgatory/examples/proxy/tail"
	"github.com/gopurgatory/purgatory/operation"
)

// delayedFetch is a client's fetch (Kafka's DelayedFetch): see
// 01_fetch.go for how it is answered. It is built for every fetch; one
// that can be answered at once never waits.
//
// Its parts are set before it is submitted, and TryComplete only reads
// them; after it completes, OnComplete (and the upstream reads it starts)
// fill them in, and TryComplete is never called again: nothing races.
type delayedFetch struct {
	operation.State
	s        *Server
	r        *request
	req      *kmsg.FetchRequest
	iso      cache.Isolation
	minBytes int
	maxBytes int
	deadline time.Time // when max_wait_ms runs out
	resp     *kmsg.FetchResponse
	parts    []fetchPart // in request order
	// forward sends every partition upstream: an isolation level the
	// proxy does not know, which upstream refuses in its own words.
	forward bool
	// replica marks a replica's fetch, refused at once.
	replica bool
	// upBytes counts the bytes read upstream so far toward min_bytes, and
	// upFailed says a partition read upstream failed: the fetch answers
	// at once, as Kafka's does when a read fails. Set before submission.
	upBytes  int
	upFailed bool
	watched  bool      // counted in proxy_fetches_waiting
	woke     time.Time // the arrival of the upstream answer that woke it (zero: none)
}

// fetchPart is one partition of a fetch.
type fetchPart struct {
	tp       tail.TP // topic by name ("" for an id the metadata does not know)
	topicID  [16]byte
	rq       kmsg.FetchRequestTopicPartition // the client's
	maxBytes int
	ti, pi   int // where its answer sits in resp

	// tail, when set, answers the partition from its cache; up is the
	// answer read upstream otherwise (or the cache's, once read).
	tail      *tail.Tail
	up        *kmsg.FetchResponseTopicPartition
	fromCache bool
	node      int32 // the upstream broker up came from
}

// newDelayedFetch resolves the partitions req names and lays out the
// response in request order.
func (s *Server) newDelayedFetch(r *request, req *kmsg.FetchRequest) *delayedFetch {
	f := &delayedFetch{s: s, r: r, req: req, minBytes: int(req.MinBytes), maxBytes: int(req.MaxBytes),
		deadline: r.Received.Add(time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond)}
	// A fetch of a session comes here as the full fetch the session
	// stands for (fetch_sessions.go): every partition of the session is
	// read, and waited on.
	f.resp = req.ResponseKind().(*kmsg.FetchResponse)
	f.replica = replicaOf(req) >= 0
	switch req.IsolationLevel {
	case 0:
		f.iso = cache.ReadUncommitted
	case 1:
		f.iso = cache.ReadCommitted
	default:
		f.forward = true
	}
	byID := req.Version >= 13
	// Sized at once: a response partition is a large struct, and growing
	// these one append at a time was a tenth of the proxy's CPU.
	n := 0
	for ti := range req.Topics {
		n += len(req.Topics[ti].Partitions)
	}
	f.parts = make([]fetchPart, 0, n)
	f.resp.Topics = make([]kmsg.FetchResponseTopic, 0, len(req.Topics))
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		name, id := rt.Topic, rt.TopicID
		if byID {
			name, _ = s.cl.TopicName(id)
		} else {
			id, _ = s.cl.TopicID(name)
		}
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		st.Partitions = make([]kmsg.FetchResponseTopicPartition, 0, len(rt.Partitions))
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			part := fetchPart{tp: tail.TP{Topic: name, Partition: rp.Partition}, topicID: id, rq: rp,
				maxBytes: int(rp.PartitionMaxBytes), ti: ti, pi: len(st.Partitions)}
			if f.replica {
				e := errorPart(rp.Partition, kerr.NotLeaderForPartition.Code)
				part.up = &e
			}
			st.Partitions = append(st.Partitions, sp)
			f.parts = append(f.parts, part)
		}
		f.resp.Topics = append(f.resp.Topics, st)
	}
	return f
}

// errorPart is a partition's answer with an error.
func errorPart(partition int32, code int16) kmsg.FetchResponseTopicPartition {
	p := kmsg.NewFetchResponseTopicPartition()
	p.Partition, p.ErrorCode = partition, code
	return p
}

// fromTail points part i at its partition's tail when the tail's cache
// answers its offset, and reports whether it did.
func (f *delayedFetch) fromTail(i int) bool {
	p := &f.parts[i]
	if f.forward || p.tp.Topic == "" {
		return false
	}
	t := f.s.tails.Get(p.tp)
	if t == nil || !f.cacheAnswers(p, t) {
		return false
	}
	p.tail = t
	t.Touch()
	return true
}

// cacheAnswers reports whether t's cache answers p now: t tails, p's
// leader epoch (v9+, -1 when unset) is t's, and p's offset is in reach.
func (f *delayedFetch) cacheAnswers(p *fetchPart, t *tail.Tail) bool {
	if t.Err() != nil || (f.req.Version >= 9 && p.rq.CurrentLeaderEpoch >= 0 && t.Epoch >= 0 && p.rq.CurrentLeaderEpoch != t.Epoch) {
		return false
	}
	_, ok := t.Cache.Readable(p.rq.FetchOffset, f.iso, p.maxBytes)
	return ok
}

// tailAtEnd starts tailing the partitions of up that upstream found the
// client at the end of, and points them at their tails: they wait on the
// cache from now on.
func (f *delayedFetch) tailAtEnd(up []int) {
	var starts []tail.Start
	var which []int
	for _, i := range up {
		p := &f.parts[i]
		a := p.up
		atEnd := a.ErrorCode == 0 && len(a.RecordBatches) == 0 && p.rq.FetchOffset == a.HighWatermark &&
			(f.iso == cache.ReadUncommitted || a.LastStableOffset == a.HighWatermark)
		if atEnd && !f.forward && p.tp.Topic != "" {
			// The broker that answered without error leads the partition:
			// the tail can start before the metadata knows the topic.
			starts = append(starts, tail.Start{TP: p.tp, Offset: p.rq.FetchOffset, Leader: p.node, LeaderKnown: true})
			which = append(which, i)
		}
	}
	if len(starts) == 0 {
		return
	}
	for k, t := range f.s.tails.Start(starts) {
		p := &f.parts[which[k]]
		if t != nil && f.cacheAnswers(p, t) {
			p.tail, p.up = t, nil
			t.Touch()
		}
	}
}

// wait answers the fetch now if it may, else has it wait: in the
// purgatory on its tails, or upstream when it has none.
func (f *delayedFetch) wait() {
	keys := make([]tail.TP, 0, len(f.parts))
	var idle []int // read upstream with nothing yet
	for i := range f.parts {
		p := &f.parts[i]
		switch {
		case p.tail != nil:
			keys = append(keys, p.tp)
		case p.up.ErrorCode != 0:
			f.upFailed = f.upFailed || !setAside(p.up.ErrorCode)
		case len(p.up.RecordBatches) == 0:
			idle = append(idle, i)
		default:
			f.upBytes += min(len(p.up.RecordBatches), p.maxBytes)
		}
	}
	left := time.Until(f.deadline)
	switch {
	case f.upFailed || f.upBytes >= f.minBytes:
		f.answer()
	case len(keys) > 0:
		f.s.watch(f, left, keys)
	case len(idle) > 0 && left > 0:
		// Nothing to wait on here: upstream waits, with the time left.
		f.readUpstream(idle, int32(left.Milliseconds()), int32(max(f.minBytes-f.upBytes, 1)), f.answer)
	default:
		f.answer()
	}
}

// watch submits f to the fetch purgatory tied to its connection's context,
// which completes it if the client leaves.
func (s *Server) watch(f *delayedFetch, timeout time.Duration, keys []tail.TP) {
	f.watched = true
	s.metrics.waiting.Add(1)
	if _, err := s.fetches.TryCompleteElseWatchContext(f.r.Context(), f, timeout, keys...); err != nil {
		// Not taken (the proxy is closing, or the client has left): answer
		// with what there is; an answer to a gone client goes nowhere.
		s.metrics.waiting.Add(-1)
		f.answer()
	}
}

// TryComplete reports whether the fetch can be answered: it has min_bytes,
// counting each partition up to its partition_max_bytes (Kafka's
// accumulated size), or one of its caches no longer answers its offset
// exactly (the tail stopped, the offset was evicted, a transactional batch
// reached a read_committed fetch), which upstream then answers.
func (f *delayedFetch) TryComplete() bool {
	acc := f.upBytes
	for i := range f.parts {
		p := &f.parts[i]
		if p.tail == nil {
			continue
		}
		if p.tail.Err() != nil {
			return true
		}
		n, ok := p.tail.Cache.Readable(p.rq.FetchOffset, f.iso, p.maxBytes)
		if !ok {
			return true
		}
		if acc += n; acc >= f.minBytes {
			return true
		}
	}
	return acc >= f.minBytes
}

// OnComplete answers the fetch, whatever completed it: its bytes, a tail
// stopping, its deadline, the proxy closing; or the client leaving, when
// there is no one to answer.
func (f *delayedFetch) OnComplete() {
	if f.watched {
		f.s.metrics.waiting.Add(-1)
	}
	if f.Outcome() == operation.ContextDone {
		return
	}
	f.answer()
}

// answer reads each cached partition from its cache, reads upstream those
// it no longer answers exactly, and responds.
func (f *delayedFetch) answer() {
	var fall []int
	for i := range f.parts {
		p := &f.parts[i]
		if p.tail == nil {
			continue
		}
		t := p.tail
		res, ok := t.Cache.Read(p.rq.FetchOffset, f.iso, p.maxBytes, true)
		if !ok || t.Err() != nil {
			p.tail = nil
			fall = append(fall, i)
			continue
		}
		t.Touch()
		if f.watched && f.Outcome() == operation.Completed && len(res.Records) > 0 {
			// Woken by an upstream answer: the proxy's latency starts
			// at its arrival.
			if at := t.Appended(); at.After(f.woke) {
				f.woke = at
			}
		}
		a := kmsg.NewFetchResponseTopicPartition()
		a.Partition = p.rq.Partition
		a.HighWatermark, a.LastStableOffset, a.LogStartOffset = res.HighWatermark, res.LastStable, res.LogStart
		if f.iso == cache.ReadCommitted {
			a.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
		}
		a.RecordBatches = res.Records
		p.up, p.fromCache = &a, true
	}
	if len(fall) > 0 {
		f.readUpstream(fall, 0, 1, f.respond)
		return
	}
	f.respond()
}

// respond fills the response from the parts' answers, sharing max_bytes
// in request order, and sends it.
func (f *delayedFetch) respond() {
	remaining, minOne := f.maxBytes, true
	for i := range f.parts {
		p := &f.parts[i]
		sp := &f.resp.Topics[p.ti].Partitions[p.pi]
		a := p.up
		sp.ErrorCode = a.ErrorCode
		sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = a.HighWatermark, a.LastStableOffset, a.LogStartOffset
		sp.AbortedTransactions = a.AbortedTransactions
		sp.DivergingEpoch, sp.SnapshotID = a.DivergingEpoch, a.SnapshotID
		sp.CurrentLeader = a.CurrentLeader
		if sp.CurrentLeader.LeaderID >= 0 {
			sp.CurrentLeader.LeaderID = f.s.cfg.NodeID // KIP-951: the leader clients see
		}
		sp.PreferredReadReplica = -1
		sp.RecordBatches = []byte{}
		if a.ErrorCode == 0 {
			if recs := cache.Trim(a.RecordBatches, min(p.maxBytes, remaining), minOne); len(recs) > 0 {
				sp.RecordBatches = recs
				remaining = max(0, remaining-len(recs))
				minOne = false
			}
		}
		if !f.replica {
			f.s.metrics.answered(p.fromCache)
		}
	}
	if woke := f.woke; !woke.IsZero() {
		f.r.OnWritten(func() { f.s.metrics.woken.Observe(time.Since(woke).Seconds()) })
	}
	f.r.Respond(f.resp)
}
