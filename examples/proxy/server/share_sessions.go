package server

import (
	"bytes"
	"cmp"
	"maps"
	"math"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A share consumer (KIP-932) keeps one share session with each broker it
// fetches from, keyed there by its group and member id: the session
// holds the partitions it fetches, so that each ShareFetch names only
// what changed (new partitions, forgotten ones, acknowledgements), and
// each request carries the session's epoch, 0 to open it, -1 to close
// it, one more than the last otherwise. Through the proxy, which leads
// every partition, the consumer has one session, with the proxy, and
// its partitions may have several upstream leaders: the proxy keeps, per
// member, the client's session (its partitions, the epoch it expects
// next) and one upstream session per leader, with the partitions that
// leader has and an epoch of its own, and translates every ShareFetch
// and ShareAcknowledge into one request per leader (78_share_fetch.go,
// 79_share_acknowledge.go).
//
// A partition whose leader moved is forgotten in its old leader's session
// and named in its new one's: its acknowledgements still pending at the
// old leader are dropped (the records come back when their acquisition
// locks expire, as Kafka's do when leadership moves). An upstream answer
// that says a session is out of step (SHARE_SESSION_NOT_FOUND,
// INVALID_SHARE_SESSION_EPOCH), and a forward that fails, drop the
// member's state here: the error reaches the client, which opens a new
// session at epoch 0, and that opens new ones upstream.
//
// The state of a member is dropped when it closes its session, when it
// leaves its group (ShareGroupHeartbeat at epoch -1), or when it opens a
// new one. A member that vanishes without either leaves its state until
// the proxy closes: a few bytes per partition, and the answers of its
// legs that came back after its last ShareFetch was answered (at most one
// per leader, each at most the fetch's max_bytes; their records come
// back upstream when their locks expire).
//
// Lock order: shareSessions.mu, then the upstream cluster's (the
// leaders are looked up under it). A member's requests are planned under
// it, in the order the client sent them (a connection's requests
// are dispatched in order, and a client's share session sends one at a
// time), and sent after it is released.

// shareTP is a partition of a share session, by topic id.
type shareTP struct {
	topic     [16]byte
	partition int32
}

// shareMember keys a share session: Kafka's ShareSessionKey.
type shareMember struct{ group, member string }

// shareSessions is the proxy's side of its clients' share sessions.
type shareSessions struct {
	mu sync.Mutex // guards the following; before the upstream cluster's
	m  map[shareMember]*shareSession
}

// shareSession is one member's session with the proxy and its sessions
// upstream.
type shareSession struct {
	next  int32             // the epoch the client's next request carries
	parts map[shareTP]int32 // the client's session: each partition's upstream leader
	nodes map[int32]*upstreamShare
	// waiting is the client's ShareFetch waiting for its legs now, if
	// any; pending holds the answers of legs that came back after the
	// request that sent them was answered, for the next one
	// (share_fetch_wait.go).
	waiting *shareFetchWait
	pending []shareAnswer
}

// upstreamShare is a member's share session with one upstream broker.
type upstreamShare struct {
	epoch     int32             // the next request's: 0 opens the session
	parts     map[shareTP]bool  // the partitions it holds
	added     map[shareTP]bool  // to name in the next request
	forgotten map[shareTP]bool  // to forget in the next request
	maxBytes  map[shareTP]int32 // the client's partition_max_bytes of each
	// flight is the leg in flight to this session, nil if none: at most
	// one is, since each carries the epoch after the last one's.
	flight *shareFlight
	// release holds the records acquired here for partitions the
	// client's session no longer has: released in the next leg, which
	// forgets those the upstream session does not hold.
	release map[shareTP][]kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch
}

func newShareSessions() *shareSessions {
	return &shareSessions{m: make(map[shareMember]*shareSession)}
}

// nextShareEpoch is the epoch after e: MaxInt32 wraps to 1, as in Kafka.
func nextShareEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

// shareLeg is the part of a client's request bound for one upstream
// broker: its epoch there, the partitions new to the upstream session
// (to name) and those to forget, and the partitions whose
// acknowledgements it carries: those the upstream session holds, and
// those the client forgot in this request (see step). It is the
// planners' own copy: the handlers read it with no lock held.
type shareLeg struct {
	node     int32
	epoch    int32
	name     []shareTP // new to the upstream session
	forget   []shareTP
	owns     map[shareTP]bool
	maxBytes map[shareTP]int32 // the client's partition_max_bytes of name's partitions
	// release: records to release, of partitions the client's session
	// left (upstreamShare.release); unheld: those of them the upstream
	// session does not hold, named and forgotten in the leg.
	release map[shareTP][]kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch
	unheld  []shareTP
}

// open starts the client's session anew (epoch 0): the upstream sessions
// open anew too, each with the partitions its broker leads.
func (ss *shareSessions) open(k shareMember, parts []shareTP, maxBytes map[shareTP]int32, leader func(shareTP) int32) []*shareLeg {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	_, legs := ss.openLocked(k, parts, maxBytes, leader)
	return legs
}

// openLocked is open, returning the new session too. Legs still in flight
// for a session it replaces stay with that one (share_fetch_wait.go).
//
// REQUIRES: ss.mu held.
func (ss *shareSessions) openLocked(k shareMember, parts []shareTP, maxBytes map[shareTP]int32,
	leader func(shareTP) int32) (*shareSession, []*shareLeg) {
	sess := &shareSession{next: 1, parts: make(map[shareTP]int32), nodes: make(map[int32]*upstreamShare)}
	ss.m[k] = sess
	for _, tp := range parts {
		sess.addLocked(tp, leader(tp), maxBytes[tp])
	}
	return sess, sess.legsLocked(false)
}

// step applies an incremental request at epoch to the client's session:
// new partitions join it, then forgotten ones leave it (Kafka's order),
// partitions whose leader moved change upstream sessions. It returns the legs to send, or the
// error the client gets: SHARE_SESSION_NOT_FOUND for no session,
// INVALID_SHARE_SESSION_EPOCH for an epoch out of turn. A closing request
// (-1) drops the member's state and closes every upstream session.
func (ss *shareSessions) step(k shareMember, epoch int32, parts []shareTP, forgotten []shareTP,
	maxBytes map[shareTP]int32, leader func(shareTP) int32) ([]*shareLeg, *kerr.Error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	_, legs, _, err := ss.stepLocked(k, epoch, parts, forgotten, maxBytes, leader)
	return legs, err
}

// stepLocked is step, returning the session too, and leaving: the
// partitions the client forgot in this request, each with the upstream
// session that acquired their records, which takes their
// acknowledgements. The legs are those of the upstream sessions with no
// leg in flight; the others wait (share_fetch_wait.go).
//
// REQUIRES: ss.mu held.
func (ss *shareSessions) stepLocked(k shareMember, epoch int32, parts []shareTP, forgotten []shareTP,
	maxBytes map[shareTP]int32, leader func(shareTP) int32) (*shareSession, []*shareLeg, map[shareTP]int32, *kerr.Error) {
	sess := ss.m[k]
	switch {
	case sess == nil:
		return nil, nil, nil, kerr.ShareSessionNotFound
	case epoch == -1:
		delete(ss.m, k)
		return sess, sess.legsLocked(true), nil, nil
	case epoch != sess.next:
		return nil, nil, nil, kerr.InvalidShareSessionEpoch
	}
	sess.next = nextShareEpoch(sess.next)
	// Kafka's order (ShareSession.update): the named partitions join the
	// session, then the forgotten ones leave it. A partition both named
	// and forgotten leaves: the client names it only to acknowledge its
	// records (kgo does so for a partition it stopped fetching), and keeping
	// it would fetch it upstream and answer the client a partition its
	// session no longer has, whose records it drops (they come back only
	// when their locks expire).
	for _, tp := range parts {
		if _, ok := sess.parts[tp]; !ok {
			sess.addLocked(tp, leader(tp), maxBytes[tp])
		}
	}
	var leaving map[shareTP]int32 // forgotten where it was named: see below
	for _, tp := range forgotten {
		node, ok := sess.parts[tp]
		if !ok {
			continue
		}
		if sess.nodes[node].drop(tp) {
			if leaving == nil {
				leaving = map[shareTP]int32{}
			}
			leaving[tp] = node
		}
		delete(sess.parts, tp)
	}
	for tp, node := range sess.parts {
		if now := leader(tp); now != node {
			sess.nodes[node].drop(tp)
			sess.addLocked(tp, now, sess.nodes[node].maxBytes[tp])
		}
	}
	legs := sess.legsLocked(false)
	// A partition the client forgot carries its acknowledgements, if any,
	// to the upstream session that acquired its records, in the leg that
	// forgets it there (the broker applies them before it forgets).
	for tp, node := range leaving {
		for _, leg := range legs {
			if leg.node == node {
				leg.owns[tp] = true
			}
		}
	}
	return sess, legs, leaving, nil
}

// drop forgets the member's state: its upstream sessions are out of step,
// or it left its group.
func (ss *shareSessions) drop(k shareMember) {
	ss.mu.Lock()
	delete(ss.m, k)
	ss.mu.Unlock()
}

// dropMember forgets every session of member in group, whatever its
// state: it left the group.
func (ss *shareSessions) dropMember(group, member string) { ss.drop(shareMember{group, member}) }

// addLocked puts tp in the client's session, in node's upstream session.
//
// REQUIRES: ss.mu held.
func (sess *shareSession) addLocked(tp shareTP, node, maxBytes int32) {
	sess.parts[tp] = node
	u := sess.nodes[node]
	if u == nil {
		u = &upstreamShare{parts: map[shareTP]bool{}, added: map[shareTP]bool{}, forgotten: map[shareTP]bool{},
			maxBytes: map[shareTP]int32{}}
		sess.nodes[node] = u
	}
	u.parts[tp], u.added[tp], u.maxBytes[tp] = true, true, maxBytes
	delete(u.forgotten, tp)
}

// drop takes tp out of the upstream session: forgotten in its next
// request, unless it was never named there. It reports whether tp is to
// be forgotten: whether the upstream session had it.
func (u *upstreamShare) drop(tp shareTP) bool {
	delete(u.parts, tp)
	if u.added[tp] {
		delete(u.added, tp) // never sent: nothing to forget
		return false
	}
	u.forgotten[tp] = true
	return true
}

// legsLocked returns a leg per upstream session that has partitions or
// something to forget or release, and no leg in flight, each at its
// epoch, which moves on (closing: every opened session's leg at -1, in
// flight or not, since Kafka takes -1 at any point of a session, and the
// member's sessions are done). An upstream session left with nothing to
// send is dropped. O(the session's partitions).
//
// REQUIRES: ss.mu held.
func (sess *shareSession) legsLocked(closing bool) []*shareLeg {
	var legs []*shareLeg
	for node, u := range sess.nodes {
		switch {
		case u.flight != nil && !closing: // its leg waits for the one in flight (share_fetch_wait.go)
			continue
		case len(u.parts) == 0 && len(u.forgotten) == 0 && len(u.release) == 0 && u.flight == nil,
			closing && u.epoch == 0: // never opened upstream: nothing to close
			delete(sess.nodes, node)
			continue
		}
		legs = append(legs, sess.legLocked(node, closing))
	}
	slices.SortFunc(legs, func(a, b *shareLeg) int { return cmp.Compare(a.node, b.node) })
	return legs
}

// legLocked returns the leg of node's upstream session: what it names,
// forgets and releases, at its epoch (-1 closing), which moves on.
//
// REQUIRES: ss.mu held.
func (sess *shareSession) legLocked(node int32, closing bool) *shareLeg {
	u := sess.nodes[node]
	leg := &shareLeg{node: node, epoch: u.epoch, owns: maps.Clone(u.parts), maxBytes: map[shareTP]int32{}}
	if closing {
		leg.epoch = -1 // the broker releases what the member holds: no release needed
	} else if len(u.release) > 0 {
		leg.release = u.release
		for tp := range u.release {
			if !u.parts[tp] {
				leg.unheld = append(leg.unheld, tp)
			}
		}
		sortShareTPs(leg.unheld)
	}
	u.release = nil
	for tp := range u.added {
		leg.name = append(leg.name, tp)
		leg.maxBytes[tp] = u.maxBytes[tp]
	}
	for tp := range u.forgotten {
		leg.forget = append(leg.forget, tp)
		delete(u.maxBytes, tp)
	}
	sortShareTPs(leg.name)
	sortShareTPs(leg.forget)
	clear(u.added)
	clear(u.forgotten)
	u.epoch = nextShareEpoch(u.epoch)
	return leg
}

// ack plans a ShareAcknowledge at epoch of the partitions tps: a leg per
// upstream session that holds some of them, each at its epoch, which
// moves on; the upstream sessions it does not concern keep theirs. A
// partition no opened upstream session holds is returned in orphans: its
// records were not acquired through this session. -1 closes the client's
// session and every upstream one. The error is step's.
func (ss *shareSessions) ack(k shareMember, epoch int32, tps []shareTP) (legs []*shareLeg, orphans []shareTP, err *kerr.Error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	sess := ss.m[k]
	switch {
	case sess == nil:
		return nil, nil, kerr.ShareSessionNotFound
	case epoch == -1:
		delete(ss.m, k)
		legs = sess.legsLocked(true)
	case epoch != sess.next:
		return nil, nil, kerr.InvalidShareSessionEpoch
	default:
		sess.next = nextShareEpoch(sess.next)
		byNode := map[int32]*shareLeg{}
		for _, tp := range tps {
			node, ok := sess.parts[tp]
			u := sess.nodes[node]
			if !ok || u.epoch == 0 {
				continue // an orphan: see below
			}
			if byNode[node] == nil {
				byNode[node] = &shareLeg{node: node, epoch: u.epoch, owns: maps.Clone(u.parts)}
				u.epoch = nextShareEpoch(u.epoch)
				legs = append(legs, byNode[node])
			}
		}
	}
	for _, tp := range tps {
		if !slices.ContainsFunc(legs, func(l *shareLeg) bool { return l.owns[tp] }) {
			orphans = append(orphans, tp)
		}
	}
	return legs, orphans, nil
}

// sortShareTPs sorts tps by topic id, then partition, so that the
// requests built from them do not depend on map order.
func sortShareTPs(tps []shareTP) {
	slices.SortFunc(tps, func(a, b shareTP) int {
		if c := bytes.Compare(a.topic[:], b.topic[:]); c != 0 {
			return c
		}
		return cmp.Compare(a.partition, b.partition)
	})
}
