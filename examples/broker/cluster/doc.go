// Package cluster is this broker's membership in its cluster, the
// broker's side of KRaft (Kafka's BrokerServer with its
// BrokerLifecycleManager): the brokers --cluster names and the quorum they
// vote in (Brokers), the metadata log this broker applies and the
// controller it runs (Member.Open), its peers, and its heartbeat to the
// active controller, with the controlled shutdown. Package metalog is the
// log, package controller the decisions; this package opens and follows
// them, and says what they mean for this broker: whether it is registered
// (it leads nothing until it is), which broker is the active controller,
// whether another broker may fetch as a follower. The request handlers
// (package server), replica management (package replica) and the
// coordinator runtime read the image through it; none of them is
// imported here.
//
// # The cluster
//
// Every broker is started with the same --cluster list, id@host:port,...
// (Parse); a broker alone is a cluster of one (Single), with a local
// metadata log and no peers. Every broker of a cluster is a voter of the
// metadata quorum (KRaft's combined mode) at the address
// controller.quorum.voters gives it, or at its Kafka port + 1000. The
// quorum's leader is the active controller: it places topics
// (Brokers.Placement), fences a broker whose heartbeats stop and elects
// new leaders from the ISR with a bumped leader epoch.
//
// # Peers and heartbeat
//
// In a cluster, the Member holds one kgo client per other broker
// (peers.go). Its heartbeat (heartbeat.go) renews this broker's session
// at the active controller every broker.heartbeat.interval.ms, with this
// broker's epoch (its incarnation: the time it started), and at once when
// the quorum's leader changes; a fenced broker registers again with its
// next heartbeat. Close first asks the controller, with controlled, to
// fence this broker while it still serves (controlled.shutdown.enable),
// so that its leaderships move to the other replicas of their ISRs, and
// hands the quorum's leadership over if it held it.
//
// # Goroutines
//
// The heartbeat, in a cluster; and whatever Go runs: package replica's
// fetchers (one per other broker), its ISR check and the ISR changes it
// sends the controller. Close cancels their context and waits for them
// before it closes the controller and the log. The metadata log applies
// records on its own goroutine (Raft's FSM goroutine, or the proposer's
// for a local log) and calls Open's applied there; its leadership
// callback runs on its watcher goroutine.
//
// # Lock order
//
// The metadata log applies records under its own lock (metalog.Log.mu),
// which comes before every lock of the broker: applied takes the
// storage's locks and calls CheckAndComplete. Nothing holding a broker
// lock waits for the log. The Member holds no lock of its own; the peers'
// goroutines take none across a request to another broker.
package cluster
