// Package server is a Kafka-protocol broker built on the purgatory: every
// request that has to wait (a long-poll fetch, an acks=all produce, a group
// join, a member's session) waits as an operation in a purgatory, not in a
// sleeping goroutine or a per-request timer.
//
// # Requests
//
// Each connection has a reader goroutine, which reads frames (bounded by
// socket.request.max.bytes), decodes them with franz-go's kmsg and hands
// them to the handler of their API, and a writer goroutine, which writes the
// answers strictly in request order. Requests are pipelined: the reader
// does not wait for an answer before reading the next request, up to
// queued.max.requests.per.connection requests ahead. A handler never
// blocks: it answers at once, or submits an operation whose OnComplete
// answers later. One file per API, named by key (00_produce.go,
// 01_fetch.go, ...), each opening with the versions it serves.
//
// An ApiVersions request newer than the broker is answered in v0 with
// UNSUPPORTED_VERSION and the supported ranges, as Kafka does; any other
// unknown API, unsupported version or malformed request closes the
// connection with a log line, as Kafka does.
//
// # Waiting
//
// An operation waiting on behalf of a connection is tracked by it: when the
// client goes away, the connection force-completes it, so nothing is left
// behind in a purgatory.
//
// # Data
//
// Topics, partitions and their logs live in package storage, in memory:
// Produce appends through it and then checks the fetches and produces
// waiting on the partition (CheckAndComplete, with no lock held); a waiting
// fetch reads it again when it completes. An acks=all produce waits until
// the partition's high watermark passes its batch, which on one broker is
// at once; replication will move the watermark with its followers.
//
// # Lock order
//
// An operation's lock, then the broker's data locks (a partition's, a
// group's), then a connection's lock; a connection's lock is never held
// while calling out. Purgatory callbacks run with no purgatory lock held.
package server
