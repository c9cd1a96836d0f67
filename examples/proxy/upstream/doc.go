// Package upstream is the Kafka cluster behind the proxy, as the proxy sees
// it: connections to its brokers, its metadata (brokers, controller,
// topics with their ids, each partition's leader and leader epoch), the
// API versions its brokers serve, and the group and transaction
// coordinators found so far.
//
// # Connections
//
// A Conn is one TCP connection to one broker. Requests are encoded with
// franz-go's kmsg at the version they carry, never another: a request a
// client sent at v7 goes upstream at v7, so fields and semantics that
// differ between versions (topic ids in Produce v13, MEMBER_ID_REQUIRED in
// JoinGroup v4) stay the client's. Send never blocks: requests are queued,
// written in Send order by the connection's writer (which dials first), and
// their answers read in the same order by its reader, as Kafka answers
// them. Every Send's callback runs exactly once: with the response, or with
// an error when the connection fails, times out or is closed, and then for
// every request still queued or in flight, in order. A request is timed
// from when it is written: the request timeout plus what the request
// itself may wait upstream (a fetch's max_wait_ms, a join's rebalance
// timeout, a produce's timeout). A dead Conn stays dead; the owner opens
// another.
//
// This is why the proxy does not forward through kgo.Client: kgo sets
// every request's version to the highest it and the broker share, with no
// way to keep the client's, and it has no asynchronous call, so pipelined
// requests could not be handed to it in order without waiting for each
// answer.
//
// A Session is the set of connections one client connection of the proxy
// uses, one per upstream broker, opened on first use: the client's
// requests reach each broker in the order the client sent them, and a
// request that waits upstream (a JoinGroup through a rebalance, an
// acks=all produce) delays only that client's later requests to that
// broker, as it would without the proxy.
//
// # Metadata
//
// The Cluster refreshes its metadata every metadata.max.age, when asked
// (Refresh, after an error that says leadership moved; at most once per
// metadata.min.age), and takes in every metadata response a client's
// request brings back (Absorb). It handshakes ApiVersions with each broker
// it connects to and keeps the versions all of them serve. Dial failures
// back off per address (reconnect.backoff.ms, doubling up to
// reconnect.backoff.max.ms), so a broker that is down is not dialled by
// every request.
//
// # Lock order
//
// Cluster.mu, then a Conn's or a Session's mu; none is held while a
// callback runs or while dialling, writing or reading.
package upstream
