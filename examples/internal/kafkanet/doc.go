// Package kafkanet is the Kafka network layer the example broker and the
// example proxy share (Kafka's SocketServer and RequestChannel): it owns
// the listener, the client connections and their budgets, reads and
// decodes requests, and writes the answers; what a request means is the
// Handler's, which each of them gives it, as net/http's Server serves a
// Handler.
//
// # Connections
//
// Serve accepts connections on a listener (Listen: Kafka's listeners and
// advertised.listeners) until Close. An accept error (EMFILE, short of
// kernel memory) is retried after a backoff, as net/http's Server does,
// from 5ms doubling to a second. A connection past max.connections, or
// past max.connections.per.ip from its client's host, is closed as soon
// as it is accepted (WithMaxConnections).
//
// Each connection has a reader goroutine, which reads frames, decodes
// them and hands each to Handler.ServeKafka without waiting for earlier
// answers (pipelining, up to queued.max.requests.per.connection ahead:
// WithMaxInFlight), and a writer goroutine, which writes the answers
// strictly in request order, as clients require, whatever order they come
// in. An answer made while its request is dispatched (a metadata request,
// a fetch answered from what is there) is written by the reader itself
// once ServeKafka returns, when no further request is buffered behind it:
// the commonest exchange costs no goroutine wake-up. An answer that comes
// later (from a purgatory's OnComplete, an upstream's callback) wakes the
// writer. Either writes every answer ready, in order, gathered into
// writes of about 64 KiB.
//
// A request is answered once (Request.Respond, RespondHolding, NoResponse,
// HangUp), from any goroutine. An operation that waits on a request's
// behalf is submitted with its connection's context (Request.Context):
// when the client goes away, the connection cancels it and the operation
// completes at once, so that nothing is left behind in a purgatory.
//
// # Security
//
// A listener has a name and a security protocol (ListenWith, Kafka's
// listeners and listener.security.protocol.map, read by ParseListeners):
// PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL. On a TLS listener the
// reader completes the handshake first, within socket.read.timeout.ms (a
// failure is refused as tls_handshake), and a client certificate names
// the connection's principal ("User:" and its subject). On a SASL
// listener the connection authenticates before the Handler sees anything
// but ApiVersions (sasl_gate.go, Kafka's SaslServerAuthenticator):
// SaslHandshake (v1) picks a mechanism of WithSASL's authenticator,
// SaslAuthenticate requests carry its exchange, both answered here; a
// request larger than 512 KiB (sasl.server.max.receive.size) or of any
// other API before that closes the connection (refused as
// unauthenticated). A failed exchange is answered
// SASL_AUTHENTICATION_FAILED after connection.failed.authentication.delay.ms,
// by a delayed operation in the server's AuthenticationFailure purgatory
// under the connection's key (not a sleeping goroutine: a hundred
// failures wait as a hundred timer tasks), and the connection closes
// once the answer is written; the reader reads nothing more meanwhile.
// With connections.max.reauth.ms a session's lifetime is told the client
// (KIP-368), which authenticates again on its connection (as the same
// principal) before it ends, or is closed at its next request.
// Request.Principal (Conn.Principal) is who the client is:
// User:ANONYMOUS until it authenticates, if ever. The Handler declares
// SaslHandshake and SaslAuthenticate (Supports), so that they are read
// and advertised, and answers them only from listeners without SASL
// (Kafka's ILLEGAL_SASL_STATE).
//
// # Framing and limits
//
// A frame is a 4-byte size and a body; a size over socket.request.max.bytes
// (WithRequestMaxBytes), or over what the connection or its client's host
// may hold of the memory budget while it is read (WithMemoryShares; see
// Memory), closes the connection before the body is read. The body's
// buffer is never sized from the size alone: it starts at 4 KiB and
// doubles as bytes arrive, so that a client claiming 100 MiB and sending
// 10 bytes costs 4 KiB.
//
// Waiting for a frame's first byte is idleness (connections.max.idle.ms,
// WithIdleTimeout, which spares a connection owed an answer: a JoinGroup
// through a long rebalance). From its first byte, the whole frame must
// arrive within socket.read.timeout.ms (WithReadTimeout): it is the
// request's deadline, not a measure of silence, so that a client that
// trickles a byte every few seconds is closed at it as one that stops is,
// and no request half sent holds memory for longer. The time the server
// spends not reading the frame (waiting for memory) moves the deadline:
// the client has the whole timeout to send. The default 30s lets a request
// of 100 MiB come at 3.5 MB/s, one of 1 MiB at 35 KB/s; a server whose
// clients send large requests over slower links raises it.
//
// A header or body kmsg cannot decode, an unknown API or a version the
// Handler does not serve closes the connection, as Kafka does
// (ErrBadRequest), but for an ApiVersions newer than the Handler's, which
// is read as v0 to be answered UNSUPPORTED_VERSION with the versions
// served.
//
// # Memory
//
// The bytes held for clients are bounded by queued.max.request.bytes
// (WithMemoryBudget, budget.go): request bodies from their first byte
// until the Handler releases them (Request.ReleaseBody) or answers, and
// the records an answer holds (Request.Room, RespondHolding) until they
// are written. A reader that finds the budget spent stops reading its
// socket until bytes come back; one request at a time may overdraw it, so
// that requests half read can never wedge every reader. An answer never
// waits: it takes what is left.
//
// So that one client cannot take the budget from the others, sending
// large requests and then holding them half sent, the request bodies
// being read (their size read, not all of their bytes yet) are bounded
// per connection and per client host (WithMemoryShares, share.go:
// queued.max.request.bytes.per.connection and .per.ip, by default a
// quarter and a half of the budget). A body counts at its declared size,
// in its host's share, from its size until its last byte (no buffer is
// sized from it: this is bookkeeping); a body that arrives whole in one
// read is never being read, and does not count. A request over either
// share is refused at once; one that fits in its host's share but not in
// what its host's other requests being read leave waits, before its body,
// holding nothing of the budget and keeping no other host waiting, until
// they arrive or their deadline closes them. A request admitted never
// waits for its host again, so a host's connections cannot wedge one
// another; and since a reader waiting for its host holds nothing of the
// budget, the budget's overdraft still lets one request through when it
// is spent. One host's requests half sent thus hold about half the budget
// at most (their chunks round up), each until its deadline, and the other
// clients' requests are read meanwhile. What the shares cannot stop is
// many hosts together: they are bounded by the budget and the deadline
// alone.
//
// A reader that stops, for the budget or for its host's share, is counted
// and logged as the refusals are (reasons memory_wait and
// host_share_wait), and counted while it waits in
// <namespace>_readers_waiting.
//
// # Decoding
//
// Bodies are decoded with kmsg on the reader's goroutine, holding one of
// the server's decode slots (WithDecodeSlots, GOMAXPROCS by default):
// however many connections send at once, no more bodies are decoded at
// once than there are cores, and a decode costs CPU in proportion to the
// bytes it is given, which socket.request.max.bytes bounds (decode.go).
//
// # Refusals and metrics
//
// Every refusal (a connection past a limit or its IP's connection rate
// quota, an accept error, a frame too
// large or over its share, a request too slow or malformed, and those the
// Handler makes with Request.Refuse) is counted in
// <namespace>_refusals_total by reason and logged at most once a minute
// per client host and reason, so that a hostile client cannot flood the
// log; so is a reader's stop for memory. The server's other metrics
// (WithRegisterer, WithNamespace) are <namespace>_requests_total and
// _request_latency_seconds by API (read to answered), _connections,
// _handler_panics_total, _queued_bytes and _readers_waiting (by the limit
// waited on). A Handler that panics is a bug:
// the panic is logged with its stack and counted, and its connection
// closed; the server goes on.
//
// RaiseFileLimit raises the soft RLIMIT_NOFILE to the hard one and says
// what it got, for a server that shares its file descriptors out (the
// broker's max.connections and log files).
//
// # Throttles
//
// Request.Throttle mutes a connection for a quota's throttle time, as
// Kafka mutes a throttled channel since KIP-219: the handler answers at
// once, with throttle_time_ms, and the reader reads no further request
// until the time has passed, while the writer writes what is owed. The
// end of a mute is a delayed operation in the server's Throttle
// purgatory, under the connection's key, that expires then (or completes
// when the connection closes): no goroutine sleeps. Muted readers are
// counted in <namespace>_connections_muted. A muted reader does not read
// its socket, so a client that goes away while muted is noticed when the
// mute ends, as Kafka notices it.
//
// A connection_creation_rate quota (KIP-612, WithConnectionQuotas: a
// client IP's own, else the default IP entity's) bounds the connections
// an IP opens per second, measured as Kafka's ConnectionQuotas measures
// it, a Rate over the quota windows (conn_rate.go). The connection that
// takes its IP over is accepted, not served, and closed after the
// throttle time Kafka computes, at most one window: its close is a
// delayed operation in the Throttle purgatory too, and Drain closes what
// is still held. It is refused as connection_creation_rate, and counts
// neither in the rate nor against max.connections.
//
// # Shutting down
//
// Close stops accepting; the connections open go on being served. Drain
// stops every reader and waits until each connection has written what it
// owes, or its context ends, when it closes the sockets under their
// writers: the owner answers what waits (closing its purgatories) before
// or while it drains.
//
// # Goroutines
//
// One accept loop per Serve, on the caller's goroutine; with SASL, the
// AuthenticationFailure purgatory's reaper, and from the first throttle
// the Throttle purgatory's, both stopped by Drain; per
// connection a reader (which also runs the Handler's ServeKafka and writes what is
// ready when it is idle) and a writer, both ended by the connection's
// close, which Drain waits for. WithConnClosed runs on the reader's
// goroutine once both are done.
//
// # Lock order
//
// Server.mu (the listeners and connections) is a leaf. A Conn's mu comes
// after any lock the Handler holds when it answers (a purgatory's
// operation lock around OnComplete); it is never held while calling out,
// neither into the Handler nor into the memory budget, whose lock is a
// leaf too, as the host shares' is: neither is taken with the other held.
// The refusals' lock is a leaf: a reader logs its stop for memory after
// the budget's or the shares' lock is released.
// The connection rates' lock is a leaf: the ConnectionQuotas are asked
// before it is taken.
package kafkanet
