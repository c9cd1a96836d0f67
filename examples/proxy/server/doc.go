// Package server is the example Kafka proxy, built on the purgatory:
// clients see it as their one broker, it forwards to the upstream cluster
// what it does not serve, and it serves every consumer that reads a
// partition at its end from one shared upstream long poll per partition,
// their fetches waiting in its Fetch purgatory until that poll brings
// data. It is laid out as the example broker's server package is: one
// file per Kafka API, served through the network layer the broker uses
// too (package kafkanet).
//
// # The cluster clients see
//
// The proxy listens on one address and presents itself as one broker
// (node.id): Metadata names it as the only broker, the controller and the
// leader and replica of every partition (03_metadata.go), FindCoordinator
// as the coordinator of every group (10_find_coordinator.go), and
// ApiVersions lists what both it and every upstream broker serve
// (18_api_versions.go). Topics, topic ids, leader epochs, offsets and
// errors are upstream's. The leader hints of KIP-951 in Produce and Fetch
// answers name the proxy too, so no client ever learns an upstream
// broker's address. One listener, rather than one per upstream broker,
// keeps the proxy's address stable while upstream brokers come and go.
//
// # Forwarding
//
// Every client connection has a session of its own upstream (package
// upstream): one connection per upstream broker, opened on first use. A
// request the proxy does not serve itself goes at the client's version, in
// the order the client sent it, to the broker its content routes it to:
// a partition's leader (Produce, ListOffsets: split per leader and merged
// back when a request spans several), a group's or a transaction's
// coordinator (routes.go; looked up with FindCoordinator and cached),
// the controller (topic creation and deletion), the broker a config
// resource names (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs:
// configs_split.go), or any broker. A request
// that waits upstream (a JoinGroup through a rebalance, an acks=all
// produce) thus delays only that client's later requests to that broker,
// as it would without the proxy. The proxy's metadata follows upstream:
// it is refreshed every metadata.max.age.ms, after an error that says
// leadership moved, and from every Metadata answer a client's request
// brings back.
//
// Upstream's answers and errors reach the client as upstream gave them. A
// forward that fails in transport (the broker went away, timed out)
// answers a partition-level request's partitions NOT_LEADER_OR_FOLLOWER,
// which clients retry after a metadata refresh, and closes the connection
// of a client whose request has no partitions (a group or admin request),
// after writing what it owed before: the client retries as when its
// broker goes away.
//
// # Fetches at the end: the purgatory
//
// See 01_fetch.go. A fetch reads each partition from the cache of the
// partition's tail (package tail, package cache) when the cache answers
// its offset exactly, and from upstream otherwise; a partition found at
// its end upstream starts being tailed there. A fetch without min_bytes
// waits as an operation (delayedFetch, Kafka's DelayedFetch) in the
// proxy's Fetch purgatory, watched under each partition it reads from a
// cache. The tail's append is the event: it calls CheckAndComplete on the
// partition, which completes the fetches that now have min_bytes
// (counting each partition up to partition_max_bytes); the others
// complete at max_wait_ms. A tail that stops (its upstream broker went
// away, its leader moved, the topic was deleted) calls CheckAndComplete
// too, and its waiting fetches read the partition from upstream: the
// client gets upstream's own answer, or NOT_LEADER_OR_FOLLOWER when no
// broker answers, never a hang. A client that disconnects has its waiting
// fetches completed by its connection's context. Closing the proxy closes the
// purgatory, which answers every waiting fetch.
//
// # Fetch sessions
//
// Clients get fetch sessions (KIP-227) from the proxy, as from a Kafka
// broker (fetch_sessions.go): a full fetch at epoch 0 opens one, and the
// client's incremental fetches then name only what changed. The proxy
// resolves a fetch's session before anything else: the fetch it
// authorizes, reads and has wait is the full one the session stands for,
// so that an incremental fetch waits on every partition of its session,
// and its answer is filtered down to the partitions with records or news
// (a moved high watermark, log start or last stable offset, an error).
// The sessions live in one cache of
// max.incremental.fetch.session.cache.slots, evicted by Kafka's rules,
// not with their connection. Upstream, the proxy's own fetches stay
// sessionless.
//
// # Requests
//
// The connections are the network layer's (package kafkanet, the
// broker's too): each has a reader goroutine, which reads frames (bounded
// by socket.request.max.bytes and socket.read.timeout.ms, their bytes by
// queued.max.request.bytes and its shares per connection and per client
// address), decodes them with kmsg and hands them to
// their handler (dispatch.go) without waiting for earlier answers, up to
// queued.max.requests.per.connection ahead; and a writer goroutine, which
// writes the answers in request order as they become ready (the reader
// writes those its handler made at once itself). Connections are bounded
// by max.connections and max.connections.per.ip, and what is refused is
// counted in proxy_refusals_total. Handlers do not block: they answer at
// once, from an upstream callback, or from an operation's OnComplete (but
// for a coordinator lookup the proxy has not cached, which holds the
// connection's later requests for one round trip, to keep their order). One file per Kafka API the proxy handles itself,
// named by key (00_produce.go, 01_fetch.go, ...), each opening with the
// versions it serves and what it does; routes.go lists the APIs forwarded
// unchanged. An unknown API, an unsupported version or a malformed request
// closes the connection, as Kafka does.
//
// # Security
//
// The proxy terminates its clients' security and has its own upstream
// (config_security.go). Its listener may be SSL, SASL_PLAINTEXT or
// SASL_SSL (listeners, listener.security.protocol.map, ssl.*): TLS from
// PEM files reloaded when replaced, SASL (PLAIN, SCRAM-SHA-256/512)
// answered by the network layer against sasl.users.file, a failed
// authentication answered after connection.failed.authentication.delay.ms
// by a delayed operation. Upstream, every connection speaks
// upstream.security.protocol and authenticates as the proxy
// (upstream.sasl.*), before anything else is sent on it: one principal
// for every client, which the upstream cluster's ACLs see.
//
// With authorizer.class.name (and super.users,
// allow.everyone.if.no.acl.found, as the broker's), each client is
// authorized with its own principal: the proxy reads the upstream
// cluster's ACL bindings as itself, with DescribeAcls, at start and every
// acl.refresh.ms (acls.go), and checks each request against them before
// it serves or forwards it, as package authz's table says (authz.go,
// and each API file's "Authorization" paragraph): a client gets from the
// shared cache only the partitions it may READ. It fails closed: until
// the bindings are loaded, and while upstream refuses them
// (SECURITY_DISABLED, CLUSTER_AUTHORIZATION_FAILED: logged), only the
// super users are allowed; an API without a check is refused. Without
// it, every authenticated client may do what the proxy's principal may.
// Not done: a client's identity passed upstream, and an upstream
// session's lifetime (a broker with connections.max.reauth.ms closes the
// connection, and the proxy dials again).
//
// Share groups (KIP-932) are forwarded: their heartbeats and offset
// administration to the group's coordinator, ShareGroupDescribe and
// DescribeShareGroupOffsets split by coordinator, and ShareFetch and
// ShareAcknowledge to the partitions' leaders, the client's one share
// session with the proxy kept as one share session per upstream leader
// (share_sessions.go); a ShareFetch is answered as soon as one leader
// brings records, the others' legs staying in flight for the next one
// (share_fetch_wait.go). KIP-848's heartbeats go to the coordinator too.
//
// Not served: replica fetches, and the APIs neither routes.go nor an API file lists
// (OffsetForLeaderEpoch, DeleteRecords, ACLs (which upstream would apply
// as the proxy's principal), client quotas): ApiVersions does not
// offer them, and clients do without or fail as with a broker that lacks
// them.
//
// # Lock order
//
// An operation's lock (around TryComplete), then a cache's (a leaf).
// fetchSessions.mu, then a fetchSession's; neither is held while a fetch
// is read or answered. The tail manager's lock, then the upstream cluster's. shareSessions.mu,
// then the upstream cluster's (a share request's leaders are looked up
// under it); it is released before the request is sent and before the
// client is answered. A connection's lock
// (kafkanet.Conn's), its clientSession's (session.go) and an upstream
// connection's are leaves. No lock is held while calling
// CheckAndComplete, while an upstream callback or an OnComplete runs, or
// while answering a request.
package server
