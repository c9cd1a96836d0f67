// Package metadata is the cluster's metadata image and the records that
// change it, as KRaft's MetadataImage and its metadata records: the cluster
// id, the brokers' registrations (epoch, fenced or not), the topics with
// their ids and configs, and each partition's replicas, leader, leader
// epoch, partition epoch and in-sync replicas (ISR); the users' SCRAM
// credentials, the ACL bindings (package acl's) and the client quotas
// (quota.go, with their precedence: [Image.ClientQuota]), which images
// share until a record changes them.
//
// # The image
//
// An [Image] is immutable: [Image.Apply] returns a new image and leaves the
// old one as it was, so a reader holding one (a Metadata answer, an
// election being computed) never sees it change under it, and needs no
// lock. Applying the same records in the same order gives every broker the
// same image: the records are the log of a Raft quorum (package metalog),
// and the image is what every broker serves Metadata from.
//
// # Decisions
//
// What the active controller decides is computed here, as pure functions
// of an image, so that it is tested without a quorum or a clock:
// [Fence] (a broker's session expired: it leaves every ISR, and the
// partitions it led get a new leader from their ISR),
// [Register] (a broker registered: the offline partitions whose ISR it is
// in are led by it again), [AlterISR] (a leader's ISR change, checked against
// the partition and leader epochs), [Place] (a new topic's replicas) and
// [AddPartitions] (a topic grown: its new partitions placed as Place would
// have placed them, so that placement stays a function of the partition's
// index; the record's [NewPartitions] say which count they follow) and
// [SetTopicConfigs] (a topic's own configs replaced, whole, as
// AlterConfigs asks or as [IncrementalConfigs] computes them from the
// current ones; turning unclean.leader.election.enable on elects the
// topic's offline partitions uncleanly in the same record) and
// [Reassign] (KIP-455's reassignments, started, completed by the AlterISR
// that brings the last target replica in sync, or cancelled: reassign.go)
// and [SetConfigs] (a broker's, the cluster default's or a group's
// configs replaced, whole: resource_configs.go; the cluster default of
// unclean.leader.election.enable turned on elects every offline partition
// that then allows it, in the same record).
// Each returns a [Record] for the controller to commit; nothing is changed
// until it is applied.
//
// # Elections
//
// A partition's leader is always a member of its ISR, and the ISR only
// holds replicas that have every record the leader acknowledged. When the
// leader is fenced, the first unfenced replica of the ISR (in replica
// order) takes over, with the leader epoch bumped. When no unfenced
// replica is in the ISR, the partition is offline: its leader is
// [NoLeader] and its ISR keeps the last member, which alone may lead it
// again, as KRaft does, unless its topic enables unclean election
// ([ConfigUncleanLeaderElection], false by default; the cluster's default
// otherwise, see [UncleanElection]): then the first live replica outside
// the ISR leads, alone in the ISR, at a new leader epoch, and the records
// it lacks are lost (its followers truncate to it by leader epoch, and
// consumers see the truncation through KIP-320).
//
//	replicas [1 2 3], ISR [1]; broker 1 fenced:
//	  clean:   leader -1, ISR [1]   offline until broker 1 is back
//	  unclean: leader 2,  ISR [2]   leader epoch + 1
package metadata
