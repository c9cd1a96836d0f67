// Package server is an HTTP long-poll service built on the purgatory: the
// embedding that is not Kafka. Clients store values under keys, and wait for
// a key's next value; a wait is a delayed operation, watched under its key,
// that the key's next POST completes, or else its timeout.
//
// # The API
//
//	POST /v1/keys/{key}                  body: the value
//	     200 {"key":"k","version":N}     the value is the key's version N; its waiters are answered
//	GET  /v1/keys/{key}?after=N&timeout=D
//	     200 body: the value             the key is past version N: at once, or when a POST moves it
//	     204                             nothing new within the timeout
//	     503 Retry-After: 1              shutting down, or too many requests waiting already
//	GET  /v1/stats                       {"pending":P,"keys":K}: waiting requests, stored keys
//	GET  /metrics                        the purgatory's metrics and the Go runtime's, for Prometheus
//
// A key is the rest of the path after /v1/keys/ ('/' included), 1 to 256
// bytes. A key's version counts its POSTs; one never posted has version 0.
// Every answer about a key carries its version in the Key-Version header,
// which a client passes back as after to wait for what follows: a loop of
// GETs sees every version, or, if it falls behind, the newest. after
// defaults to 0 (any value); timeout is a Go duration, 30s by default, at
// most Config.MaxTimeout, and 0 makes the GET a plain poll. A GET that
// waits past its timeout while a POST is on its way answers the new value,
// not a 204: a late answer is never an empty one. Versions live in memory
// and start again from 0 when the service restarts.
//
// Bad input is answered 400 (a missing or long key, an after or a timeout
// that does not parse, a timeout over the cap), 413 (a value over
// Config.MaxValueBytes), 408 (a value not sent within 10s), 405 (another
// method) or 507 (a new key past Config.MaxKeys), with a one-line message
// in plain text.
//
// # How a GET waits
//
// A GET that cannot be answered at once becomes a wait (wait.go): its
// TryComplete asks the store whether the key is past after, and its
// OnComplete takes the answer the purgatory decided (the value, or nothing
// new). It is submitted with TryCompleteElseWatchContext, tied to the
// request's context, so a client that goes away frees it at once (outcome
// ContextDone) instead of at its timeout. The handler's goroutine then
// waits on the operation's Done channel and writes the answer; no callback
// ever writes to a connection, so a POST that wakes ten thousand waiters
// costs ten thousand TryCompletes and channel closes, not ten thousand
// socket writes on the POST's goroutine.
//
// A POST stores the value, releases the store's lock, then calls
// CheckAndComplete(key). Lock order: an operation's lock, then the store's;
// nothing holds the store's lock while it calls into the purgatory.
//
// # Bounds
//
// The purgatory's timer is capped at Config.MaxWaiters waiting GETs
// (timer.WithMaxPending): one more is answered 503 at once (outcome
// Rejected), so a flood of waiters costs their connections, not an
// unbounded heap. Values are bounded by Config.MaxValueBytes and keys by
// Config.MaxKeys, so the store holds at most their product (640 MiB with
// the defaults). A wait drops its reference to the value once the answer is
// written: the purgatory keeps completed operations listed until a purge,
// and they would otherwise keep old values alive.
//
// # Shutdown
//
// Shutdown closes the purgatory first, which answers every waiting GET
// (outcome Closed, 503), and then shuts the HTTP server down, which waits
// for those answers to be written. A GET that arrives in between is
// answered 503 too.
package server
