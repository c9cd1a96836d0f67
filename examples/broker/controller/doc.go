// Package controller is the cluster's active controller (Kafka's
// QuorumController): the broker whose metadata log leads the Raft quorum
// decides, and commits to the log, what changes the cluster's metadata:
// topic creation, growth (CreatePartitions), configs (AlterConfigs, IncrementalAlterConfigs) and deletion, broker registrations, fencing, leader
// elections (on fencing, on request, and to rebalance), ISR changes and partition reassignments (KIP-455: started, cancelled, and completed by the ISR change that brings the last target replica in sync), users' SCRAM credentials, ACL bindings and client quotas. Every other broker answers such requests
// NOT_CONTROLLER (ErrNotController), as Kafka's brokers do for a
// controller they are not.
//
// # Decisions
//
// Each decision reads the image as the log has applied it here, computes a
// record with package metadata's pure functions, and proposes it; one
// decision at a time (Controller.decideMu), so that each is computed from
// the image its predecessor left. A controller that has just been elected
// first waits until every record committed before its term is applied
// (a Raft barrier), so that it never decides from a stale image.
//
// # Broker sessions
//
// Each broker heartbeats the active controller every
// broker.heartbeat.interval.ms. Its session is a delayed operation in the
// controller's "BrokerSession" purgatory, keyed by node id, with
// broker.session.timeout.ms as its timeout: a heartbeat completes it
// (renewed) and submits the next; expiry fences the broker, which leaves
// every ISR at once, and each partition it led gets a new leader from its
// ISR with its leader epoch bumped, or goes offline (package metadata,
// Fence). A new controller gives every broker of the cluster a session
// when it takes office, as Kafka's does, so that a broker which died with
// the old controller is fenced too; Kafka's are all fresh, and a kill -9
// of a broker that led both the quorum and partitions then costs a Raft
// election more than any other leader's. Here the old controller's
// session counts from the last time the new one heard from it as the
// quorum's leader (raft's last contact), which is no later than the last
// heartbeat it could have renewed anywhere the quorum sees, with at
// least two heartbeat intervals left, so that a live old controller,
// once it follows the new one, renews it in time (see
// sessionsAtActivationLocked).
//
// Two repairs keep a missed event from stopping fencing for good, silently:
// a heartbeat refused by a controller whose log leads the quorum but which
// is idle (a leadership observation it missed, an activation that gave up)
// activates it; and each heartbeat gives a fresh session to any unfenced
// broker left without one (its expiry's fencing failed to commit), so that
// the fencing is tried again a session timeout later.
//
// # Elections on request and the leader imbalance check
//
// A topic whose unclean.leader.election.enable is turned on
// (AlterConfigs) has its offline partitions elected uncleanly in the
// record that sets it, as Kafka's controller acts on that config at once;
// so does the cluster-wide dynamic default of it (the broker resource
// named ""), for every topic without its own, and that default, when set,
// replaces the controller's unclean.leader.election.enable in every later
// decision (fencing, registration, reassignment).
// ElectLeaders commits the preferred or unclean elections of the
// partitions asked for in one record (package metadata, Elect). While
// active, the controller also runs Kafka's auto leader rebalance every
// leader.imbalance.check.interval.seconds, a fixed-delay schedule on its
// timer (the one the sessions' deadlines are on): it elects the preferred
// replica of each partition whose preferred replica is live and in sync,
// for the brokers leading too few of the partitions they prefer
// (metadata.Imbalanced). The schedule is stopped when the controller
// steps down, and a check of an older term commits nothing.
//
// # Lock order
//
// decideMu, then mu, then the timer's and the purgatory's own locks
// (renewLocked adds to the timer with mu held). So a timer or purgatory
// callback never takes mu or decideMu: a session's expiry and an imbalance
// check decide from a goroutine of their own (wg), never on the timer's
// goroutine, which would otherwise wait for mu while renewLocked, holding
// it, waits for the timer.
package controller
