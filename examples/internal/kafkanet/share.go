package kafkanet

import (
	"container/list"
	"math"
	"sync"
)

// hostShares bounds, per client host, the bytes of the request bodies
// being read from it (queued.max.request.bytes.per.ip): a body counts at
// its declared size from the moment its size is read, before any of it
// is, until it has arrived whole (or its connection gives up on it); a
// body handled, or one that arrived whole in a single read, is no longer
// being read and does not count. So one host's connections, however many,
// hold at most its share of the memory budget in requests half sent, and
// leave the rest of it to the other hosts.
//
// A reader whose request does not fit in what its host's other requests
// leave waits before it reads any of the body: it holds nothing of the
// memory budget meanwhile, and no other host's reader waits behind it.
// Because a body is counted whole when it is admitted, a request admitted
// never waits here again: a host's connections cannot wedge one another
// halfway, each holding part of the share. A request larger than the
// share itself is refused by the caller, which checks before it waits.
//
// Waiters are granted in arrival order, but a later one that fits passes
// an earlier one that does not (first fit): a heartbeat or a metadata
// request does not wait behind its host's large produce. A large request
// can be passed by a stream of small ones from its own host only, and
// each of those is read within socket.read.timeout.ms.
//
// Lock order: a leaf, like the memory budget's lock; it is never held
// with Conn.mu or the budget's lock.
type hostShares struct {
	limit int64 // immutable; math.MaxInt64: unbounded, nothing is counted

	mu      sync.Mutex // guards the following
	hosts   map[string]*hostShare
	waiting int // readers waiting, all hosts together
}

// A hostShare is one host's bodies being read, and its readers waiting.
// An entry with nothing held and nobody waiting is deleted.
type hostShare struct {
	held    int64
	waiters list.List // of *shareWaiter, in arrival order
}

type shareWaiter struct {
	n     int64
	ready chan struct{} // closed when the bytes are granted
}

func newHostShares(limit int64) *hostShares {
	return &hostShares{limit: limit, hosts: make(map[string]*hostShare)}
}

// bounded reports whether the shares are counted at all.
func (s *hostShares) bounded() bool { return s.limit < math.MaxInt64 }

// acquire counts n bytes of a body to be read against host's share,
// waiting while its host's other bodies leave less than n, until done is
// closed (errBudgetClosed, nothing counted). stopped, unless nil, is
// called if it has to wait, before it does, without s.mu held. n must not
// be more than the share: the caller refuses such a request. O(1) when
// it does not wait.
func (s *hostShares) acquire(host string, n int64, done <-chan struct{}, stopped func()) error {
	if !s.bounded() {
		return nil
	}
	s.mu.Lock()
	h := s.hosts[host]
	if h == nil {
		h = &hostShare{}
		s.hosts[host] = h
	}
	if h.held+n <= s.limit {
		h.held += n
		s.mu.Unlock()
		return nil
	}
	w := &shareWaiter{n: n, ready: make(chan struct{})}
	e := h.waiters.PushBack(w)
	s.waiting++
	s.mu.Unlock()
	if stopped != nil {
		stopped()
	}
	return awaitGrant(&s.mu, w.ready, done, func() {
		h.waiters.Remove(e)
		s.waiting--
		s.forgetIdleLocked(host, h)
	})
}

// release gives back n bytes acquire counted for host, and grants the
// waiters of host that fit now, in order.
func (s *hostShares) release(host string, n int64) {
	if !s.bounded() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.hosts[host]
	if h == nil {
		return // nothing was counted: a programmer's error, but harmless
	}
	h.held -= n
	for e := h.waiters.Front(); e != nil; {
		next := e.Next()
		if w := e.Value.(*shareWaiter); h.held+w.n <= s.limit {
			h.held += w.n
			h.waiters.Remove(e)
			s.waiting--
			close(w.ready)
		}
		e = next
	}
	s.forgetIdleLocked(host, h)
}

// forgetIdleLocked deletes h, host's entry, if it holds nothing and
// nobody waits: the map is as large as the hosts reading requests.
//
// REQUIRES: s.mu held.
func (s *hostShares) forgetIdleLocked(host string, h *hostShare) {
	if h.held == 0 && h.waiters.Len() == 0 {
		delete(s.hosts, host)
	}
}

// readersWaiting returns how many readers wait for their host's share.
func (s *hostShares) readersWaiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting
}
