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
// # Framing and limits
//
// A frame is a 4-byte size and a body; a size over socket.request.max.bytes
// (WithRequestMaxBytes) closes the connection before the body is read. The
// body's buffer is never sized from the size alone: it starts at 4 KiB
// and doubles as bytes arrive, so that a client claiming 100 MiB and
// sending 10 bytes costs 4 KiB. Waiting for a frame's first byte is
// idleness (connections.max.idle.ms, WithIdleTimeout, which spares a
// connection owed an answer: a JoinGroup through a long rebalance); once
// a frame has begun, a client that sends nothing for socket.read.timeout.ms
// (WithReadTimeout) is closed. A header or body kmsg cannot decode, an
// unknown API or a version the Handler does not serve closes the
// connection, as Kafka does (ErrBadRequest), but for an ApiVersions newer
// than the Handler's, which is read as v0 to be answered
// UNSUPPORTED_VERSION with the versions served.
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
// Every refusal (a connection past a limit, an accept error, a frame too
// large, a stalled or malformed request, and those the Handler makes with
// Request.Refuse) is counted in <namespace>_refusals_total by reason and
// logged at most once a minute per client host and reason, so that a
// hostile client cannot flood the log. The server's other metrics
// (WithRegisterer, WithNamespace) are <namespace>_requests_total and
// _request_latency_seconds by API (read to answered), _connections,
// _handler_panics_total and _queued_bytes. A Handler that panics is a bug:
// the panic is logged with its stack and counted, and its connection
// closed; the server goes on.
//
// RaiseFileLimit raises the soft RLIMIT_NOFILE to the hard one and says
// what it got, for a server that shares its file descriptors out (the
// broker's max.connections and log files).
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
// One accept loop per Serve, on the caller's goroutine; per connection a
// reader (which also runs the Handler's ServeKafka and writes what is
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
// leaf too. The refusals' lock is a leaf.
package kafkanet
