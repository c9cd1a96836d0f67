package group

import (
	"fmt"
	"runtime/debug"
)

// unlock releases g's mutex, checking the group first when invariants are
// on (-race runs).
//
// REQUIRES: g.mu held.
func (g *group) unlock() {
	if invariants {
		g.verifyLocked()
	}
	g.mu.Unlock()
}

// verifyLocked panics if the group's bookkeeping disagrees with its
// members: the counts that TryComplete relies on, the static and pending
// maps, the leader, the transactions' offsets and their index.
// O(members + protocols + producers).
//
// REQUIRES: g.mu held.
func (g *group) verifyLocked() {
	fail := func(format string, args ...any) {
		msg := fmt.Sprintf("group %s (%s, generation %d): ", g.id, g.st, g.gen) + fmt.Sprintf(format, args...)
		// Crash: a panic here would be recovered by the purgatory (in a
		// callback) or the server (in a handler), leaving the group
		// locked and a test hanging instead of failing.
		stack := debug.Stack()
		go panic(fmt.Sprintf("invariant violated: %s\n%s", msg, stack))
		select {}
	}
	awaiting := 0
	supported := make(map[string]int)
	for id, m := range g.members {
		if m.id != id {
			fail("member %s filed under %s", m.id, id)
		}
		if m.join != nil {
			awaiting++
			if m.join.res != nil {
				fail("member %s awaits join in an answered JoinGroup", id)
			}
		}
		if m.instanceID != "" && g.static[m.instanceID] != id {
			fail("instance %s maps to %q, not its member %s", m.instanceID, g.static[m.instanceID], id)
		}
		if _, ok := g.pending[id]; ok {
			fail("member %s is also pending", id)
		}
		for _, p := range m.protocols {
			supported[p.Name]++
		}
	}
	if awaiting != g.awaiting {
		fail("%d members await join, counted %d", awaiting, g.awaiting)
	}
	if len(supported) != len(g.supported) {
		fail("protocol counts %v, want %v", g.supported, supported)
	}
	for p, n := range supported {
		if g.supported[p] != n {
			fail("protocol counts %v, want %v", g.supported, supported)
		}
	}
	for inst, id := range g.static {
		if m := g.members[id]; m == nil || m.instanceID != inst {
			fail("instance %s maps to %s, which is not its member", inst, id)
		}
	}
	switch {
	case len(g.members) == 0 && g.leader != "":
		fail("leader %s without members", g.leader)
	case len(g.members) > 0 && g.members[g.leader] == nil:
		fail("leader %q is no member", g.leader)
	case g.st == Empty && len(g.members) > 0:
		fail("Empty with %d members", len(g.members))
	case g.st != PreparingRebalance && g.join != nil:
		fail("a delayed join outside PreparingRebalance")
	case (g.st == CompletingRebalance || g.st == Stable) && g.proto == "":
		fail("no protocol in a generation")
	case g.st != Empty && g.expiry != nil:
		fail("offset expiration armed outside Empty")
	}
	for id := range g.pendingSync {
		if g.members[id] == nil {
			fail("pending SyncGroup of %s, no member", id)
		}
	}
	g.c.mu.Lock()
	defer g.c.mu.Unlock()
	for id, offs := range g.txns {
		if len(offs) == 0 {
			fail("producer %d has no offsets pending", id)
		}
		if _, ok := g.c.producers[id][g]; !ok {
			fail("producer %d's offsets pending, not in its index", id)
		}
		if g.st == Dead {
			fail("producer %d's offsets pending in a dead group", id)
		}
	}
}
