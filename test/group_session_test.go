package test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/server"
)

// rawMember is a group member that speaks JoinGroup, SyncGroup and
// Heartbeat by hand, through a kgo client (which finds the coordinator and
// picks the versions): a test decides exactly when it heartbeats, and when
// it stops.
type rawMember struct {
	t     *testing.T
	cl    *kgo.Client
	group string

	memberID   string
	generation int32
	assigned   []int32 // its partitions of the topic
}

// joinRaw joins group as a dynamic consumer of topic supporting the range
// assignor, with session timeout session, and syncs: it returns once the
// rebalance it caused is over and it has its assignment.
func joinRaw(t *testing.T, srv *server.Server, group, topic string, session time.Duration) *rawMember {
	t.Helper()
	m := &rawMember{t: t, cl: newClient(t, srv), group: group}
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{topic}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = group, m.memberID, "consumer"
		req.SessionTimeoutMillis = int32(session / time.Millisecond)
		req.RebalanceTimeoutMillis = int32(10 * time.Second / time.Millisecond)
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", meta.AppendTo(nil)
		req.Protocols = []kmsg.JoinGroupRequestProtocol{p}
		resp, err := req.RequestWith(ctx, m.cl)
		require.NoError(t, err)
		m.memberID = resp.MemberID
		if resp.ErrorCode == kerr.MemberIDRequired.Code {
			continue // KIP-394: join again with the id handed out
		}
		require.NoError(t, kerr.ErrorForCode(resp.ErrorCode), "JoinGroup")
		require.NotEqual(t, resp.LeaderID, m.memberID, "the real consumer, there first, leads")
		m.generation = resp.Generation
		break
	}
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = group, m.memberID, m.generation
	resp, err := req.RequestWith(ctx, m.cl)
	require.NoError(t, err)
	require.NoError(t, kerr.ErrorForCode(resp.ErrorCode), "SyncGroup")
	var as kmsg.ConsumerMemberAssignment
	require.NoError(t, as.ReadFrom(resp.MemberAssignment))
	for _, tp := range as.Topics {
		if tp.Topic == topic {
			m.assigned = append(m.assigned, tp.Partitions...)
		}
	}
	slices.Sort(m.assigned)
	return m
}

// heartbeat sends one heartbeat and returns its error code.
func (m *rawMember) heartbeat() error {
	m.t.Helper()
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = m.group, m.memberID, m.generation
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, m.cl)
	require.NoError(m.t, err)
	return kerr.ErrorForCode(resp.ErrorCode)
}

// TestSilentMemberIsExpelled joins a raw member with a 1s session timeout
// to a group beside a real consumer; it takes half the partitions, then
// stops heartbeating (its connection stays open: only its session speaks
// for it). Its session, an operation in the Heartbeat purgatory, expires
// a second after its last heartbeat: the coordinator removes it and
// rebalances, and the real consumers end up with every partition.
//
// It falls silent while the group is Stable, and, in the second case,
// just as another consumer joins: the rebalance that join starts waits
// for the silent member to rejoin, but not for its 10s rebalance timeout,
// since a member that has not rejoined still owes heartbeats (Kafka's
// hasSatisfiedHeartbeat); its session expires, and its removal completes
// the rebalance.
func TestSilentMemberIsExpelled(t *testing.T) {
	const (
		partitions = 12
		session    = time.Second
		// slack is how late past its deadline the removal may be seen:
		// the timer fires within a tick (1ms) of the deadline, and the
		// rest is scheduling under -race on a small machine plus the
		// 5ms between DescribeGroups.
		slack = 250 * time.Millisecond
	)
	srv := startGroupBroker(t, func(c *server.Config) { c.GroupMinSessionTimeout = 500 * time.Millisecond })
	for _, rebalance := range []bool{false, true} {
		name := "stable group"
		if rebalance {
			name = "during a rebalance"
		}
		t.Run(name, func(t *testing.T) {
			group := fmt.Sprintf("expel-%t", rebalance)
			admin := newClient(t, srv)
			createTopic(t, admin, group, partitions)
			l := newLedger(0)
			consumer := startGroupConsumer(t, srv, "consumer", group, group, l, kgo.Balancers(kgo.RangeBalancer()))
			waitBalanced(t, admin, group, partitions, consumer)

			raw := joinRaw(t, srv, group, group, session)
			t.Logf("raw member %s joined generation %d with partitions %v", raw.memberID, raw.generation, raw.assigned)
			require.Len(t, raw.assigned, partitions/2, "range gives the raw member half")
			eventually(t, func() bool {
				ps := consumer.partitions()
				return len(ps) == partitions/2 && !slices.ContainsFunc(ps, func(p int32) bool { return slices.Contains(raw.assigned, p) })
			}, "the real consumer owns the other half")
			waitGroupWaits(t, srv, 2)

			// Heartbeats keep it in the group past its session timeout.
			var last time.Time
			for range 4 {
				time.Sleep(session / 3) // a heartbeat interval, not a verdict
				last = time.Now()
				require.NoError(t, raw.heartbeat(), "the raw member is alive")
			}
			lastAnswered := time.Now()

			// Then it falls silent.
			members := []*groupConsumer{consumer}
			if rebalance {
				members = append(members, startGroupConsumer(t, srv, "late", group, group, l, kgo.Balancers(kgo.RangeBalancer())))
				eventually(t, func() bool { return describeGroup(t, admin, group).State == "PreparingRebalance" }, "the late consumer starts a rebalance")
			}
			eventually(t, func() bool {
				for _, m := range describeGroup(t, admin, group).Members {
					if m.MemberID == raw.memberID {
						return false
					}
				}
				return true
			}, "the silent member is removed")
			removed := time.Now()
			sinceSent, sinceAnswered := removed.Sub(last), removed.Sub(lastAnswered)
			t.Logf("%s: removed %v after its last heartbeat was sent (%v after it was answered); session timeout %v",
				name, sinceSent.Round(time.Millisecond), sinceAnswered.Round(time.Millisecond), session)
			assert.GreaterOrEqual(t, sinceSent, session, "not before its session timeout")
			assert.Less(t, sinceAnswered, session+slack, "within its session timeout and a little slack")

			took := waitBalanced(t, admin, group, partitions, members...)
			t.Logf("%s: the real consumers own all %d partitions %v after the removal was seen", name, partitions, took.Round(time.Millisecond))
			waitGroupWaits(t, srv, len(members))
			assert.ErrorIs(t, raw.heartbeat(), kerr.UnknownMemberID, "the expelled member is told so")
			for _, c := range members {
				c.checkCommits()
			}
		})
	}
}
