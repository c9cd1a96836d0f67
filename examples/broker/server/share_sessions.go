package server

// Share sessions (KIP-932), as fetch sessions (KIP-227) are for fetches:
// a member's ShareFetch names the partitions it adds to its session and
// those it forgets, and later ones fetch them all without naming them
// again. ShareSessionEpoch 0 opens a session (replacing the member's
// former one), each later request carries the next epoch, and -1 closes
// it (the member's acquired records are then released). A session is kept
// per group and member, on each broker the member fetches from.

import (
	"math"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// shareTP is a partition of a share session, by topic id.
type shareTP struct {
	topic     [16]byte
	partition int32
}

type shareSessionKey struct{ group, member string }

// shareSession is one member's session.
type shareSession struct {
	next  int32     // the epoch the next request must carry
	parts []shareTP // in the order they were added
}

// shareSessions are the broker's share sessions.
type shareSessions struct {
	mu sync.Mutex // guards the following
	m  map[shareSessionKey]*shareSession
}

func newShareSessions() shareSessions {
	return shareSessions{m: make(map[shareSessionKey]*shareSession)}
}

// fetch moves group and member's session on for a ShareFetch at epoch,
// adding add and dropping forget, and returns the partitions it fetches.
// A session that closes (epoch -1) returns the partitions it had. Errors
// are Kafka's: SHARE_SESSION_NOT_FOUND for a session it does not have,
// INVALID_SHARE_SESSION_EPOCH for an epoch out of turn.
func (ss *shareSessions) fetch(group, member string, epoch int32, add, forget []shareTP) ([]shareTP, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	k := shareSessionKey{group, member}
	if epoch == 0 {
		sess := &shareSession{next: 1}
		sess.add(add)
		ss.m[k] = sess
		return slices.Clone(sess.parts), nil
	}
	sess, err := ss.turnLocked(k, epoch)
	if err != nil {
		return nil, err
	}
	sess.add(add)
	sess.parts = slices.DeleteFunc(sess.parts, func(tp shareTP) bool { return slices.Contains(forget, tp) })
	return slices.Clone(sess.parts), nil
}

// acknowledge moves the session on for a ShareAcknowledge at epoch, which
// cannot open one (epoch 0 is INVALID_SHARE_SESSION_EPOCH); -1 closes it
// and returns its partitions.
func (ss *shareSessions) acknowledge(group, member string, epoch int32) ([]shareTP, error) {
	if epoch == 0 {
		return nil, kerr.InvalidShareSessionEpoch
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	sess, err := ss.turnLocked(shareSessionKey{group, member}, epoch)
	if err != nil {
		return nil, err
	}
	return slices.Clone(sess.parts), nil
}

// turnLocked checks epoch against k's session and moves it on; -1 closes
// it. REQUIRES: ss.mu held.
func (ss *shareSessions) turnLocked(k shareSessionKey, epoch int32) (*shareSession, error) {
	sess := ss.m[k]
	switch {
	case sess == nil:
		return nil, kerr.ShareSessionNotFound
	case epoch == -1:
		delete(ss.m, k)
		return sess, nil
	case epoch != sess.next:
		return nil, kerr.InvalidShareSessionEpoch
	}
	if sess.next == math.MaxInt32 {
		sess.next = 1
	} else {
		sess.next++
	}
	return sess, nil
}

// drop forgets every session of member in group (it left the group).
func (ss *shareSessions) drop(group, member string) {
	ss.mu.Lock()
	delete(ss.m, shareSessionKey{group, member})
	ss.mu.Unlock()
}

func (sess *shareSession) add(tps []shareTP) {
	for _, tp := range tps {
		if !slices.Contains(sess.parts, tp) {
			sess.parts = append(sess.parts, tp)
		}
	}
}
