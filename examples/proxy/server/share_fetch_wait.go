package server

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A client's ShareFetch is answered as a broker answers it: as soon as
// one upstream leg brings acquired records or an error, not when the
// slowest leg, a leader with nothing to acquire, ends its max_wait_ms.
// The legs still out then stay in flight, attached to the member's
// upstream sessions (upstreamShare.flight), and nothing they acquire is
// lost:
//
//   - A leg's answer goes to the request that sent it while that one
//     waits; else to the member's request waiting now (which adopted
//     the leg); else to the member's pending answers, which the next
//     ShareFetch takes and answers at once (its legs then go with
//     max_wait_ms 0, as a broker holding records answers at once).
//   - At most one leg per upstream session is in flight: each carries
//     the epoch after the last one's. A request with nothing for a
//     session whose leg is out sends it nothing and adopts that leg.
//     One with acknowledgements for it waits for that leg, then sends
//     its own, which carries them; the client is answered only once
//     every leg carrying its acknowledgements has answered (kgo, like
//     Kafka's client, reads acknowledge_error_code in the answer to the
//     request that carried them, and Kafka holds that answer with the
//     fetch). Its session changes without acknowledgements go with the
//     next leg to that session, whenever one is sent.
//   - Records an answer brings for a partition the client's session no
//     longer has (forgotten while the leg was out) are not answered: kgo
//     drops what it did not ask for. Nor are those of a partition moved
//     to another leader meanwhile: its acknowledgements would go there.
//     They are released (AcknowledgeType RELEASE) in the next leg to
//     the upstream session that acquired them, which forgets the
//     partition there too.
//   - Closing (-1) sends every opened upstream session its -1 at once,
//     leg in flight or not: Kafka checks no epoch sequence for -1
//     (SharePartitionManager.newContext), and releases what the member
//     holds when its session closes; records of a leg that answers while
//     the close waits are not given to the client.
//   - A member dropped (a session error upstream, a leader's transport
//     failure, a new session at epoch 0, the member leaving its group)
//     keeps its legs' answers only for requests still waiting for them:
//     what they acquired otherwise stays locked upstream until its
//     acquisition lock expires, as when a client's connection dies.
//     So do the records of a leg whose connection closes (the client's,
//     or the proxy's at Close): its answer is never read.
//
// No goroutine and no timer of its own: a request waits only for legs,
// each bounded by its max_wait_ms upstream (a leg sent after another's
// answer carries what is left of the request's), and the upstream
// connections fail every leg when they close.
//
// Lock order: shareSessions.mu guards every field marked so here; the
// upstream sends and the client's answer happen after it is released.

// shareFlight is a leg in flight to one upstream session.
type shareFlight struct {
	owner *shareFetchWait   // the request its answer goes to while it waits
	next  []*shareFetchWait // requests whose legs to the session wait for this one, in order
}

// shareAnswer is an upstream session's answer kept for the member's next
// ShareFetch.
type shareAnswer struct {
	node int32
	resp *kmsg.ShareFetchResponse
}

// shareSend is a leg to send once shareSessions.mu is released.
type shareSend struct {
	w    *shareFetchWait
	sess *shareSession
	node int32
	req  *kmsg.ShareFetchRequest
}

// shareFetchWait is one client ShareFetch between its plan and its answer.
type shareFetchWait struct {
	s        *Server // immutable, as are the fields to deadline
	plan     *shareFetchPlan
	req      *kmsg.ShareFetchRequest
	sess     *shareSession
	closing  bool
	deadline time.Time // now plus max_wait_ms: what a leg sent late may wait
	// send sends a leg upstream; answer answers the client, with the
	// shard that failed in transport, if one did. Both are called with
	// no lock held.
	send   func(node int32, req kmsg.Request, done func(kmsg.Response, error))
	answer func(resp *kmsg.ShareFetchResponse, failed *shard)

	// Guarded by shareSessions.mu:
	resp    *kmsg.ShareFetchResponse
	out     map[int32]bool    // upstream sessions whose answer it waits for
	must    map[int32]bool    // of those, the ones carrying its acknowledgements
	leaving map[shareTP]int32 // forgotten in it: their acknowledgements' session
	got     bool              // an answer brought records or an error
	failed  *shard
	done    bool
}

// startShareFetch plans req, sends its legs and answers the client with
// answer, now or when the legs allow (see above); legs go through send.
// leader names each partition's upstream leader.
func (s *Server) startShareFetch(req *kmsg.ShareFetchRequest, leader func(shareTP) int32,
	send func(int32, kmsg.Request, func(kmsg.Response, error)), answer func(*kmsg.ShareFetchResponse, *shard)) {
	w := &shareFetchWait{s: s, req: req, send: send, answer: answer, closing: req.ShareSessionEpoch == -1,
		deadline: time.Now().Add(time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond),
		resp:     req.ResponseKind().(*kmsg.ShareFetchResponse), out: map[int32]bool{}, must: map[int32]bool{}}
	ss := s.shares
	ss.mu.Lock()
	sends, err := w.planLocked(leader)
	ready := err == nil && w.readyLocked()
	ss.mu.Unlock()
	if err != nil {
		w.resp.ErrorCode = err.Code
		answer(w.resp, nil)
		return
	}
	s.sendShareLegs(sends)
	if ready {
		w.finish()
	}
}

// planLocked moves the member's session on for w's request: its pending
// answers are taken, a leg is built for each upstream session with none
// in flight, and the others' in-flight legs are adopted or waited for.
//
// REQUIRES: shareSessions.mu held.
func (w *shareFetchWait) planLocked(leader func(shareTP) int32) ([]shareSend, *kerr.Error) {
	req, ss := w.req, w.s.shares
	plan, maxBytes, forgotten := newShareFetchPlan(req)
	w.plan = plan
	var legs []*shareLeg
	if req.ShareSessionEpoch == 0 {
		w.sess, legs = ss.openLocked(plan.member, plan.parts, maxBytes, leader)
	} else {
		var err *kerr.Error
		if w.sess, legs, w.leaving, err = ss.stepLocked(plan.member, req.ShareSessionEpoch, plan.parts, forgotten, maxBytes, leader); err != nil {
			return nil, err
		}
	}
	sess := w.sess
	for _, a := range sess.pending {
		w.deliverLocked(a.node, a.resp)
	}
	sess.pending = nil
	var sends []shareSend
	sent := map[int32]bool{}
	for _, leg := range legs {
		sent[leg.node] = true
		sends = append(sends, w.legLocked(leg))
	}
	if !w.closing {
		for node, u := range sess.nodes {
			f := u.flight
			switch {
			case f == nil || sent[node]:
			case w.acksFor(node, u):
				f.next = append(f.next, w) // its leg waits for the one out
				w.out[node], w.must[node] = true, true
			case f.owner.done:
				f.owner = w // adopted: its answer is this request's
				w.out[node] = true
			}
		}
	}
	// An older request still waiting (a client that does not wait for
	// its answers) keeps the legs it sent or adopted; the answers of
	// the others come to this one.
	sess.waiting = w
	return sends, nil
}

// acksFor reports whether w's request acknowledges records of u's
// partitions, or of partitions it forgot there.
func (w *shareFetchWait) acksFor(node int32, u *upstreamShare) bool {
	for tp := range w.plan.acks {
		if u.parts[tp] {
			return true
		}
		if n, ok := w.leaving[tp]; ok && n == node {
			return true
		}
	}
	return false
}

// legLocked makes leg w's: its request (max_wait_ms 0 when w has records
// to answer already, what is left of w's otherwise), in flight to its
// upstream session.
//
// REQUIRES: shareSessions.mu held.
func (w *shareFetchWait) legLocked(leg *shareLeg) shareSend {
	for tp, node := range w.leaving {
		if node == leg.node {
			leg.owns[tp] = true
		}
	}
	sub, carries := w.plan.legRequest(w.req, leg)
	if w.got {
		sub.MaxWaitMillis = 0
	} else if leg.epoch != -1 {
		sub.MaxWaitMillis = int32(min(max(time.Until(w.deadline).Milliseconds(), 0), int64(w.req.MaxWaitMillis)))
	}
	if u := w.sess.nodes[leg.node]; u != nil && !w.closing {
		u.flight = &shareFlight{owner: w}
	}
	w.out[leg.node] = true
	if w.closing || carries {
		w.must[leg.node] = true
	}
	return shareSend{w: w, sess: w.sess, node: leg.node, req: sub}
}

// sendShareLegs sends each leg; their answers come back to legDone.
//
// REQUIRES: shareSessions.mu not held.
func (s *Server) sendShareLegs(sends []shareSend) {
	for _, sd := range sends {
		sd.w.send(sd.node, sd.req, func(resp kmsg.Response, err error) {
			s.legDone(sd, resp, err)
		})
	}
}

// legDone takes a leg's answer (or its transport failure) to the request
// it belongs to now, sends the leg waiting for it, if any, and answers
// the requests that can be.
func (s *Server) legDone(sd shareSend, resp kmsg.Response, err error) {
	ss, sess, node := s.shares, sd.sess, sd.node
	ss.mu.Lock()
	current := ss.m[sd.w.plan.member] == sess
	var f *shareFlight
	u := sess.nodes[node]
	if u != nil && u.flight != nil && !sd.w.closing {
		f, u.flight = u.flight, nil
	}
	// owner counts on this answer: the request that sent the leg, or
	// the one that adopted it. Once it is answered, the answer goes to
	// the member's request waiting now, which did not count on it.
	owner := sd.w
	if f != nil {
		owner = f.owner
	}
	to := owner
	if to.done {
		to = nil
		if wt := sess.waiting; wt != nil && !wt.done {
			to = wt
		}
	}
	switch {
	case err != nil:
		if current {
			delete(ss.m, sd.w.plan.member) // its upstream sessions' state is unknown now
			current = false
		}
		if to != nil {
			to.failed = &shard{node: node, req: sd.req, err: err}
		}
	case to != nil:
		to.deliverLocked(node, resp.(*kmsg.ShareFetchResponse))
	case !current:
	case sessionError(resp.(*kmsg.ShareFetchResponse).ErrorCode):
		delete(ss.m, sd.w.plan.member) // the next request finds no session, and opens one
		current = false
	default:
		sess.pending = append(sess.pending, shareAnswer{node, resp.(*kmsg.ShareFetchResponse)})
	}
	// What is not kept above is lost with the member's state: see the
	// file's comment.
	var finish []*shareFetchWait
	if !owner.done {
		delete(owner.out, node)
		delete(owner.must, node)
	}
	if to != nil {
		finish = append(finish, to)
	}
	var sends []shareSend
	if f != nil {
		// The requests whose legs waited for this one: the first sends
		// its leg now, the others wait for that one; with the member's
		// state gone, they cannot be sent.
	next:
		for i, n := range f.next {
			if n.done {
				continue
			}
			finish = append(finish, n)
			switch {
			case err != nil:
				n.failed = &shard{node: node, req: sd.req, err: err}
			case !current:
				if n.resp.ErrorCode == 0 {
					n.resp.ErrorCode = kerr.ShareSessionNotFound.Code
				}
				delete(n.out, node)
				delete(n.must, node)
			default:
				sends = append(sends, n.legLocked(sess.legLocked(node, false)))
				u.flight.next = f.next[i+1:]
				break next
			}
		}
	}
	var ready []*shareFetchWait
	for _, w := range finish {
		if w.readyLocked() {
			ready = append(ready, w)
		}
	}
	ss.mu.Unlock()
	s.sendShareLegs(sends)
	for _, w := range ready {
		w.finish()
	}
}

// deliverLocked merges an upstream session's answer into w's (see
// mergeShareFetch), but for the partitions w's client no longer has:
// their records are released by the session's next leg.
//
// REQUIRES: shareSessions.mu held.
func (w *shareFetchWait) deliverLocked(node int32, m *kmsg.ShareFetchResponse) {
	topics := m.Topics[:0]
	for _, t := range m.Topics {
		kept := t.Partitions[:0]
		for _, p := range t.Partitions {
			tp := shareTP{t.TopicID, p.Partition}
			at, inSession := w.sess.parts[tp]
			if !inSession || at != node || w.closing {
				// Not the client's any more, or not through this
				// session (its leader moved: the client's acks would go
				// to the new one), or the client is closing: its records
				// go back, and only an acknowledgement's answer is the
				// client's, if it named the partition.
				if !w.closing {
					w.releaseLocked(node, tp, p.AcquiredRecords)
				}
				if !w.plan.named[tp] {
					continue
				}
				p.AcquiredRecords, p.Records = nil, nil
			}
			if len(p.AcquiredRecords) > 0 || p.ErrorCode != 0 {
				w.got = true
			}
			kept = append(kept, p)
		}
		if len(kept) > 0 {
			t.Partitions = kept
			topics = append(topics, t)
		}
	}
	m.Topics = topics
	if m.ErrorCode != 0 {
		w.got = true
	}
	if w.s.mergeShareFetch(w.resp, m) && w.s.shares.m[w.plan.member] == w.sess {
		delete(w.s.shares.m, w.plan.member)
	}
}

// releaseLocked keeps records acquired for tp by node's upstream session,
// which the client is not to get, to be released by the session's next
// leg. A session already gone takes nothing: their locks expire.
//
// REQUIRES: shareSessions.mu held.
func (w *shareFetchWait) releaseLocked(node int32, tp shareTP, recs []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord) {
	u := w.sess.nodes[node]
	if u == nil || len(recs) == 0 {
		return
	}
	if u.release == nil {
		u.release = map[shareTP][]kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{}
	}
	for _, r := range recs {
		b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = r.FirstOffset, r.LastOffset, []int8{shareAckRelease}
		u.release[tp] = append(u.release[tp], b)
	}
}

// shareAckRelease is AcknowledgeType RELEASE: the records go back to be
// acquired again, their delivery count kept.
const shareAckRelease int8 = 2

// readyLocked reports whether w can be answered now, and marks it so: a
// leg failed in transport; or every leg carrying its acknowledgements has
// answered and either one brought records or an error, or no leg is out.
//
// REQUIRES: shareSessions.mu held.
func (w *shareFetchWait) readyLocked() bool {
	if w.done {
		return false
	}
	if w.failed == nil && (len(w.must) > 0 || (len(w.out) > 0 && !w.got)) {
		return false
	}
	w.done = true
	if w.sess.waiting == w {
		w.sess.waiting = nil
	}
	return true
}

// finish answers the client: acknowledgements no leg carried answer
// NOT_LEADER_OR_FOLLOWER. w is done: no lock is needed.
func (w *shareFetchWait) finish() {
	if w.failed != nil {
		w.answer(nil, w.failed)
		return
	}
	w.plan.answerUncarried(w.resp)
	w.answer(w.resp, nil)
}
