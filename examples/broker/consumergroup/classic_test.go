package consumergroup

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	classicSession = 6 * time.Second
	classicProto   = "cooperative-sticky"
)

// classicProtocols is a classic member's protocols: one, subscribing to
// topics and saying it owns owned (topic → partitions).
func classicProtocols(topics []string, owned map[string][]int32) []ClassicProtocol {
	md := kmsg.NewConsumerMemberMetadata()
	md.Version, md.Topics = 3, topics
	for _, name := range slices.Sorted(maps.Keys(owned)) {
		op := kmsg.NewConsumerMemberMetadataOwnedPartition()
		op.Topic, op.Partitions = name, owned[name]
		md.OwnedPartitions = append(md.OwnedPartitions, op)
	}
	return []ClassicProtocol{{Name: classicProto, Metadata: md.AppendTo(nil)}}
}

// classicAssignment encodes topic's partitions ps in the ConsumerProtocol.
func classicAssignment(topic string, ps ...int32) []byte {
	ca := kmsg.NewConsumerMemberAssignment()
	ct := kmsg.NewConsumerMemberAssignmentTopic()
	ct.Topic, ct.Partitions = topic, ps
	ca.Topics = append(ca.Topics, ct)
	return ca.AppendTo(nil)
}

// decodeAssigned reads a SyncGroup's assignment: topic → partitions.
func decodeAssigned(t *testing.T, b []byte) map[string][]int32 {
	t.Helper()
	var ca kmsg.ConsumerMemberAssignment
	require.NoError(t, ca.ReadFrom(b))
	out := map[string][]int32{}
	for _, ct := range ca.Topics {
		out[ct.Topic] = ct.Partitions
	}
	return out
}

// classicJoin is a classic member's JoinGroup, owning owned.
func classicJoin(c *Coordinator, group, member string, owned map[string][]int32, topics ...string) (ClassicJoinResponse, *kerr.Error) {
	var (
		resp ClassicJoinResponse
		err  *kerr.Error
		ok   bool
	)
	c.ClassicJoin(ClassicJoinRequest{Group: group, MemberID: member, ProtocolType: ClassicProtocolType,
		Protocols: classicProtocols(topics, owned), SessionTimeout: classicSession, RebalanceTimeout: testRebalance},
		func(r ClassicJoinResponse, e *kerr.Error) { resp, err, ok = r, e, true })
	if !ok {
		panic("join not answered at once")
	}
	return resp, err
}

// convertTestGroup makes group "g" a consumer group from a classic one at
// generation 3 whose members a and b hold partitions 0-1 and 2-3 of tp.
func convertTestGroup(t *testing.T, c *Coordinator, tp TopicMeta) {
	t.Helper()
	mk := func(id string, ps ...int32) ClassicGroupMember {
		return ClassicGroupMember{MemberID: id, ClientID: "kgo", SessionTimeout: classicSession, RebalanceTimeout: testRebalance,
			Protocols: classicProtocols([]string{tp.Name}, nil), Assignment: classicAssignment(tp.Name, ps...)}
	}
	require.Nil(t, c.FromClassic("g", 3, classicProto, []ClassicGroupMember{mk("a", 0, 1), mk("b", 2, 3)}))
}

// TestClassicUpgrade converts a classic group with two members, then a
// consumer-protocol member joins: the classic members are told to
// rejoin, are walked to the new target through joins and syncs, and the
// partitions move to the new member without any partition held by two
// clients at once.
func TestClassicUpgrade(t *testing.T) {
	topics := newFakeTopics()
	tp := topics.set("t", 4)
	c, _ := newTestCoordinator(t, topics)
	convertTestGroup(t, c, tp)

	// What each client holds, as it knows it.
	held := map[string]map[string][]int32{"a": {"t": {0, 1}}, "b": {"t": {2, 3}}, "x": {}}
	gens := map[string]int32{"a": 3, "b": 3}
	require.Nil(t, c.ClassicHeartbeat("g", "a", "", 3), "before the consumer member joins, nothing moves")

	x := join(t, c, "g", "x", "t")
	assert.Equal(t, int32(4), x.MemberEpoch, "the join bumps the epoch past the generation")
	assert.Empty(t, x.Assignment.count(), "nothing is free yet")
	xEpoch := x.MemberEpoch

	checkDisjoint := func(step string) {
		t.Helper()
		seen := map[int32]string{}
		for who, h := range held {
			for _, p := range h["t"] {
				if o, dup := seen[p]; dup {
					t.Fatalf("%s: partition %d held by %s and %s", step, p, o, who)
				}
				seen[p] = who
			}
		}
	}
	rebalances := 0
	for round := 0; round < 6; round++ {
		for _, id := range []string{"a", "b"} {
			err := c.ClassicHeartbeat("g", id, "", gens[id])
			if err == nil {
				continue
			}
			require.Equal(t, kerr.RebalanceInProgress, err, "member %s", id)
			rebalances++
			jr, jerr := classicJoin(c, "g", id, held[id], "t")
			require.Nil(t, jerr)
			gens[id] = jr.Generation
			b, serr := c.ClassicSync("g", id, "", jr.Generation, nil, nil)
			require.Nil(t, serr)
			held[id] = decodeAssigned(t, b)
			checkDisjoint("after " + id + "'s sync")
		}
		resp, err := beat(t, c, "g", "x", xEpoch, Assignment{tp.ID: held["x"]["t"]})
		require.Nil(t, err)
		xEpoch = resp.MemberEpoch
		if resp.Assignment != nil {
			held["x"] = map[string][]int32{"t": resp.Assignment[tp.ID]}
		}
		checkDisjoint("after x's heartbeat")
	}
	assert.Positive(t, rebalances, "the classic members were told to rejoin")
	total := 0
	for who, h := range held {
		assert.NotEmpty(t, h["t"], "%s has partitions once reconciled", who)
		total += len(h["t"])
	}
	assert.Equal(t, 4, total, "every partition is held")
	_, states := snapshot(t, c, "g")
	for id, st := range states {
		assert.Equal(t, stable, st, "member %s reconciled", id)
	}
	assert.Equal(t, int32(4), gens["a"], "a's generation is its epoch")
	assert.Equal(t, Stable, c.stateOf("g"))
}

// stateOf returns group's state.
func (c *Coordinator) stateOf(group string) State {
	g := c.lookup(group, false)
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stateLocked()
}

// TestClassicMemberSessionAndLeave checks that a classic member's session
// is its classic session timeout, and that LeaveGroup removes it and
// bumps the epoch.
func TestClassicMemberSessionAndLeave(t *testing.T) {
	topics := newFakeTopics()
	tp := topics.set("t", 4)
	c, clk := newTestCoordinator(t, topics)
	convertTestGroup(t, c, tp)
	join(t, c, "g", "x", "t")

	clk.Advance(classicSession - time.Second)
	require.Equal(t, kerr.RebalanceInProgress, c.ClassicHeartbeat("g", "a", "", 3), "a keeps its session")
	_, err := keepAlive(t, c, "g", "x", 4)
	require.Nil(t, err)
	clk.Advance(2 * time.Second) // b's classic session is over; a's and x's are not
	assert.False(t, c.HasClassicMember("g", "b", ""), "b's session expired")
	assert.True(t, c.HasClassicMember("g", "a", ""))

	before := c.epochOf("g")
	var errs []*kerr.Error
	c.ClassicLeave("g", []ClassicLeaver{{MemberID: "a"}, {MemberID: "x"}, {MemberID: "nobody"}}, func(e []*kerr.Error) { errs = e })
	require.Len(t, errs, 3)
	assert.Nil(t, errs[0], "a leaves")
	assert.Equal(t, kerr.UnknownMemberID, errs[1], "x is no classic member")
	assert.Equal(t, kerr.UnknownMemberID, errs[2])
	assert.False(t, c.HasClassicMember("g", "a", ""))
	assert.Equal(t, before+1, c.epochOf("g"), "a's leaving bumps the epoch")
}

func (c *Coordinator) epochOf(group string) int32 {
	g := c.lookup(group, false)
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.epoch
}

// TestClassicMemberErrors checks the classic members' refusals.
func TestClassicMemberErrors(t *testing.T) {
	topics := newFakeTopics()
	tp := topics.set("t", 4)
	c, _ := newTestCoordinator(t, topics)
	convertTestGroup(t, c, tp)

	_, err := c.ClassicSync("g", "a", "", 2, nil, nil)
	assert.Equal(t, kerr.IllegalGeneration, err)
	_, err = c.ClassicSync("g", "a", "", 3, ptr("connect"), nil)
	assert.Equal(t, kerr.InconsistentGroupProtocol, err)
	b, err := c.ClassicSync("g", "a", "", 3, ptr(ClassicProtocolType), ptr(classicProto))
	require.Nil(t, err)
	assert.Equal(t, map[string][]int32{"t": {0, 1}}, decodeAssigned(t, b), "the classic assignment is kept")
	assert.Equal(t, kerr.UnknownMemberID, c.ClassicHeartbeat("g", "nobody", "", 3))
	assert.Equal(t, kerr.IllegalGeneration, c.ClassicHeartbeat("g", "a", "", 4))

	var jr ClassicJoinResponse
	var jerr *kerr.Error
	c.ClassicJoin(ClassicJoinRequest{Group: "g", ProtocolType: ClassicProtocolType, Protocols: classicProtocols([]string{"t"}, nil),
		SessionTimeout: classicSession, RequireKnownMemberID: true}, func(r ClassicJoinResponse, e *kerr.Error) { jr, jerr = r, e })
	assert.Equal(t, kerr.MemberIDRequired, jerr)
	assert.NotEmpty(t, jr.MemberID, "the member id to join with")
	c.ClassicJoin(ClassicJoinRequest{Group: "g", MemberID: "a", ProtocolType: "connect", Protocols: classicProtocols([]string{"t"}, nil)},
		func(r ClassicJoinResponse, e *kerr.Error) { jerr = e })
	assert.Equal(t, kerr.InconsistentGroupProtocol, jerr)
	c.ClassicJoin(ClassicJoinRequest{Group: "nope", MemberID: "a", ProtocolType: ClassicProtocolType, Protocols: classicProtocols([]string{"t"}, nil)},
		func(r ClassicJoinResponse, e *kerr.Error) { jerr = e })
	assert.Equal(t, kerr.UnknownMemberID, jerr, "no consumer group: the classic coordinator's")

	_, err = keepAlive(t, c, "g", "a", 3)
	assert.Equal(t, kerr.UnknownMemberID, err, "a classic member does not send ConsumerGroupHeartbeat")
	_, cerr, _ := c.ValidateCommit("g", "a", 2)
	assert.Equal(t, kerr.IllegalGeneration, cerr, "a classic member commits at its generation")
	_, cerr, _ = c.ValidateCommit("g", "a", 3)
	assert.Nil(t, cerr)
	assert.Equal(t, kerr.InconsistentGroupProtocol, c.FromClassic("g", 5, classicProto, nil), "a consumer group with members")
}

// TestClassicMembersStored checks that classic members are stored with
// their classic metadata and come back from a load as classic members,
// at their generation, with their classic session timeout.
func TestClassicMembersStored(t *testing.T) {
	topics := newFakeTopics()
	tp := topics.set("t", 4)
	store := newMemStore()
	c, _ := newTestCoordinator(t, topics, WithStore(store))
	convertTestGroup(t, c, tp)
	_, err := classicJoin(c, "g", "a", map[string][]int32{"t": {0, 1}}, "t")
	require.Nil(t, err)

	groups := store.replay()
	require.Len(t, groups, 1)
	require.Len(t, groups[0].Members, 2)
	for _, sm := range groups[0].Members {
		require.NotNil(t, sm.Classic, "member %s", sm.MemberID)
		assert.Equal(t, classicSession, sm.Classic.SessionTimeout)
		assert.Equal(t, classicProto, sm.Classic.Protocols[0].Name)
	}
	want, _ := snapshot(t, c, "g")

	c2, clk2 := newTestCoordinator(t, topics)
	_, lerr := c2.Load(groups)
	require.NoError(t, lerr)
	got, _ := snapshot(t, c2, "g")
	assert.Equal(t, want, got, "the loaded group is the stored one")
	assert.Nil(t, c2.ClassicHeartbeat("g", "b", "", 3), "b goes on at its generation")
	clk2.Advance(classicSession + time.Second)
	assert.False(t, c2.HasClassicMember("g", "a", ""), "a's loaded session is its classic one")
}

// TestToClassic: a consumer group is handed back to the classic
// coordinator only once its members are all classic ones, each with its
// assignment in the ConsumerProtocol, at the highest member epoch; its
// records are tombstoned. A session expiry that leaves classic members
// alone calls WithOnClassicOnly's hook.
func TestToClassic(t *testing.T) {
	topics := newFakeTopics()
	tp := topics.set("t", 4)
	store := newMemStore()
	var classicOnly []string
	c, clk := newTestCoordinator(t, topics, WithStore(store), WithOnClassicOnly(func(g string) { classicOnly = append(classicOnly, g) }))
	convertTestGroup(t, c, tp)
	join(t, c, "g", "x", "t")
	_, ok := c.ToClassic("g", DefaultMaxSize)
	assert.False(t, ok, "x is a consumer-protocol member")

	// x's session expires; a and b heartbeat on.
	for range 2 {
		clk.Advance(classicSession - time.Second)
		require.Equal(t, kerr.RebalanceInProgress, c.ClassicHeartbeat("g", "a", "", 3))
		require.Equal(t, kerr.RebalanceInProgress, c.ClassicHeartbeat("g", "b", "", 3))
	}
	assert.Equal(t, []string{"g"}, classicOnly, "x's expiry left classic members alone")

	cg, ok := c.ToClassic("g", DefaultMaxSize)
	require.True(t, ok)
	assert.Equal(t, int32(3), cg.Generation, "the members' epoch")
	require.Len(t, cg.Members, 2)
	assert.Equal(t, "a", cg.Members[0].MemberID)
	assert.Equal(t, map[string][]int32{"t": {0, 1}}, decodeAssigned(t, cg.Members[0].Assignment))
	assert.Equal(t, classicSession, cg.Members[1].SessionTimeout)
	assert.Equal(t, classicProto, cg.Members[1].Protocols[0].Name)
	assert.False(t, c.HasMembers("g"), "the consumer group is gone")
	assert.Empty(t, store.replay(), "its records are tombstoned")
	_, ok = c.ToClassic("g", DefaultMaxSize)
	assert.False(t, ok)
}

// TestFromClassicMalformed: a classic group whose members' subscription
// is not the ConsumerProtocol's is not converted (Kafka's
// GROUP_ID_NOT_FOUND), and nothing of it is kept.
func TestFromClassicMalformed(t *testing.T) {
	topics := newFakeTopics()
	topics.set("t", 4)
	c, _ := newTestCoordinator(t, topics)
	err := c.FromClassic("g", 2, "range", []ClassicGroupMember{{MemberID: "a", SessionTimeout: classicSession,
		Protocols: []ClassicProtocol{{Name: "range", Metadata: []byte("not a subscription")}}}})
	assert.Equal(t, kerr.GroupIDNotFound, err)
	assert.False(t, c.HasMembers("g"))
}

// TestClassicJoinAndSyncTimeouts: a classic member told to rejoin that
// heartbeats but does not rejoin within its rebalance timeout is
// removed, and so is one that joins but does not sync; one that joins
// and syncs stays.
func TestClassicJoinAndSyncTimeouts(t *testing.T) {
	topics := newFakeTopics()
	tp := topics.set("t", 4)
	c, clk := newTestCoordinator(t, topics, WithSessionTimeout(time.Minute), WithHeartbeatInterval(time.Second))
	convertTestGroup(t, c, tp)
	x := join(t, c, "g", "x", "t")

	// a rejoins and syncs whenever told to; b is told to rejoin but never
	// does; all heartbeat.
	aGen, aHeld := int32(3), map[string][]int32{"t": {0, 1}}
	require.Equal(t, kerr.RebalanceInProgress, c.ClassicHeartbeat("g", "b", "", 3), "b must rejoin")
	for elapsed := time.Duration(0); elapsed <= testRebalance; elapsed += classicSession / 2 {
		clk.Advance(classicSession / 2)
		if c.ClassicHeartbeat("g", "a", "", aGen) == kerr.RebalanceInProgress {
			jr, err := classicJoin(c, "g", "a", aHeld, "t")
			require.Nil(t, err)
			b, serr := c.ClassicSync("g", "a", "", jr.Generation, nil, nil)
			require.Nil(t, serr)
			aGen, aHeld = jr.Generation, decodeAssigned(t, b)
		}
		_ = c.ClassicHeartbeat("g", "b", "", 3)
		resp, err := keepAlive(t, c, "g", "x", x.MemberEpoch)
		require.Nil(t, err)
		x.MemberEpoch = resp.MemberEpoch
	}
	assert.False(t, c.HasClassicMember("g", "b", ""), "b never rejoined within its rebalance timeout")
	assert.True(t, c.HasClassicMember("g", "a", ""), "a rejoined and synced each time")

	jr, err := classicJoin(c, "g", "a", aHeld, "t")
	require.Nil(t, err)
	for range (testRebalance - time.Second) / time.Second {
		clk.Advance(time.Second)
		require.Nil(t, c.ClassicHeartbeat("g", "a", "", jr.Generation))
	}
	assert.True(t, c.HasClassicMember("g", "a", ""), "a's sync is not due yet")
	clk.Advance(2 * time.Second)
	assert.False(t, c.HasClassicMember("g", "a", ""), "a joined but never synced")
}
