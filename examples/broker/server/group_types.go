package server

import (
	"hash/maphash"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// One group id names one group type at a time: a classic group (package
// group), a KIP-848 consumer group (package consumergroup) or a share
// group (package sharegroup), as in Kafka's GroupMetadataManager, where
// the three share one map of groups. Here each type has its coordinator,
// so the requests that may create a group check, before they do, that no
// group of another type has the id, and answer as Kafka does when one has.
// A share group's id is:
//
//   - JoinGroup: INCONSISTENT_GROUP_PROTOCOL, with no member id
//     (classicGroupJoin);
//   - SyncGroup, Heartbeat: UNKNOWN_MEMBER_ID, and LeaveGroup the same
//     for each member (Kafka: for the request), which the classic
//     coordinator answers as no classic group has the id;
//   - OffsetCommit, TxnOffsetCommit: GROUP_ID_NOT_FOUND for every
//     partition, whatever the generation (ShareGroup.validateOffsetCommit);
//   - ConsumerGroupHeartbeat: GROUP_ID_NOT_FOUND, "Group <id> is not a
//     consumer group." (getOrMaybeCreateConsumerGroup).
//
// A classic or consumer group's id is GROUP_ID_NOT_FOUND to
// ShareGroupHeartbeat ("Group <id> is not a share group.",
// getOrMaybeCreateShareGroup) and to the share-group offset APIs.
//
// A classic member joining an Empty consumer group converts it, and a
// consumer member joining a classic group without members takes its id
// over, as Kafka converts empty groups between the two protocols; the
// consumer group's offsets stay in the classic coordinator's Empty group
// of its id either way (package consumergroup).
//
// Groups with members are converted as in Kafka's online upgrade and
// downgrade (KIP-848), as group.consumer.migration.policy allows
// (bidirectional by default; upgrade, downgrade, disabled):
//
//   - a consumer member joining a classic group with members of protocol
//     type "consumer" converts it (68_consumer_group_heartbeat.go:
//     group.ConvertToConsumer hands the members to
//     consumergroup.FromClassic); they are the consumer group's classic
//     members from then on, and their JoinGroup, SyncGroup, Heartbeat and
//     LeaveGroup go to the consumer coordinator while the consumer group
//     has members. A group whose members' subscriptions are not the
//     ConsumerProtocol's, or a refusing policy, is GROUP_ID_NOT_FOUND.
//   - when its last consumer member leaves (its heartbeat at epoch -1) or
//     times out (consumergroup.WithOnClassicOnly), a consumer group of
//     classic members goes back (consumergroup.ToClassic, then
//     group.FromConsumer), and rebalances as a classic group.
//
//   - so does a static classic member that replaces the last consumer
//     one (11_join_group.go); the group then rebalances, as after a
//     leave, where Kafka keeps the joining member's answer.
//
// Each type's size is bounded as in Kafka: group.max.size (a classic
// group: package group), group.consumer.max.size (a consumer group,
// classic members included: package consumergroup) and
// group.share.max.size (package sharegroup); a member joining a full
// group is GROUP_MAX_SIZE_REACHED. A classic group with more members than
// group.consumer.max.size is not upgraded (GROUP_ID_NOT_FOUND, "Cannot
// upgrade classic group <id> to consumer group because the group size
// exceeds the consumer group maximum size.", validateOnlineUpgrade), and
// one exactly at it is not either, its joining member
// GROUP_MAX_SIZE_REACHED, as Kafka's conversion is undone when the
// converted group is found full; a consumer group of classic members more
// than group.max.size is not downgraded (validateOnlineDowngrade...).
//
// The check and the creation are one step under groupTypes' lock of the
// id, which every request that may create a group takes first: two
// requests of different types racing for a new id cannot both create
// their group. SyncGroup, Heartbeat and LeaveGroup take it too, so that a
// conversion does not pass between their choice of coordinator and
// their call. Lock order: a groupTypes stripe, then any coordinator's
// locks; nothing takes a stripe with a coordinator's lock held.

// groupTypeStripes is the number of groupTypes' mutexes: requests that
// create groups are rare (a join, a first commit), so few stripes keep
// unrelated ids from waiting on each other.
const groupTypeStripes = 64

// groupTypes serializes, per group id, the requests that may create a
// group with their check of the other types. The zero value is ready.
type groupTypes struct {
	seed    maphash.Seed // set once by lock's first call, under once
	once    sync.Once
	stripes [groupTypeStripes]sync.Mutex
}

// lock locks id's stripe and returns its unlock. O(len(id)).
func (g *groupTypes) lock(id string) (unlock func()) {
	g.once.Do(func() { g.seed = maphash.MakeSeed() })
	mu := &g.stripes[maphash.String(g.seed, id)%groupTypeStripes]
	mu.Lock()
	return mu.Unlock
}

// notShareGroup is the refusal of a classic or consumer group request
// naming a share group's id: GROUP_ID_NOT_FOUND, nil when id is no share
// group's.
func (s *Server) notShareGroup(id string) *kerr.Error {
	if s.share.groups.Exists(id) {
		return kerr.GroupIDNotFound
	}
	return nil
}
