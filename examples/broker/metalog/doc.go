// Package metalog is the cluster's metadata log: the records of package
// metadata, committed by a Raft quorum and applied, in log order, to the
// image every broker serves Metadata from (KRaft's __cluster_metadata).
//
// # The quorum
//
// The consensus is github.com/hashicorp/raft, not code of this project:
// its TCP transport carries the quorum's traffic, raft-boltdb keeps the
// log and the votes in log.dirs (raft.db) next to its file snapshots, and
// without log.dirs its in-memory stores do. Every broker of the cluster is
// a voter (KRaft's combined mode); the voters bootstrap themselves with the
// same configuration the first time they start. The Raft leader is the
// active controller: only it proposes records (Propose answers
// ErrNotLeader elsewhere).
//
// A broker alone runs no quorum: its log is local, and Propose applies a
// record at once, in the caller's goroutine, under the log's lock.
//
// # Applying
//
// Records are applied on one goroutine (Raft's FSM goroutine, or the
// proposer's for a local log), in log order. Each apply swaps in the new
// image (atomically: readers take Image without a lock) and then calls the
// WithApplied callback with the image before and after it and the record
// (nil after a snapshot was restored, when the whole image was replaced).
// The callback runs before Propose returns on the proposer's broker, so
// that what a committed record means locally (a topic's logs created, a
// leadership taken) is done when the proposer answers its client.
//
// Lock order: Log.mu (held across an apply and its callback); the
// callback must not propose (it would wait for itself).
package metalog
