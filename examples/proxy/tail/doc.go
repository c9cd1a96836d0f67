// Package tail keeps one shared upstream long poll per partition that
// clients read at its end, and fills each partition's cache (package cache)
// with what it reads.
//
// # How a partition is tailed
//
// The proxy starts a Tail when a client's fetch finds a partition at its
// end upstream (its offset is the high watermark): the tail starts there,
// empty. From then on, every client fetch of that partition within the
// cache's reach is answered from the cache or waits in the proxy's fetch
// purgatory, and the tail is the only reader of the partition upstream.
//
// Tails are fetched per upstream leader, as Kafka's replica fetchers do:
// one fetcher per leader broker, on a connection of its own, long-polls
// every partition tailed from that broker in one fetch request
// (min_bytes 1, tail.fetch.max.wait.ms, read_uncommitted, no fetch
// session), so that the leader sees one fetch per round whatever the
// number of partitions and consumers. As soon as an answer is in, the
// fetcher appends each partition's batches to its cache, sends the next
// fetch, and only then calls the notify function for each partition that
// changed, so that answering the waiting clients overlaps the next round
// trip. A partition started while its fetcher's poll is in flight joins the
// next round: its first records may wait up to one max wait.
//
// # When a tail stops
//
// A tail stops, and the partition is no longer tailed, when:
//   - no client fetch used it for tail.idle.ms (Touch marks a use);
//   - the metadata names another leader or leader epoch for it, or the
//     leader answers with an error for it (NOT_LEADER_OR_FOLLOWER,
//     FENCED_LEADER_EPOCH, OFFSET_OUT_OF_RANGE after a truncation, a
//     deleted topic...): the metadata is refreshed;
//   - its fetch fails (the leader went away, timed out): every tail of
//     that fetcher stops, and the metadata is refreshed;
//   - its batches cannot be cached (an old message format);
//   - the Manager closes.
//
// Stopping sets the tail's Err and calls notify: the proxy's waiting
// fetches then complete and read the partition from upstream, which gives
// the client the broker's own answer (its error, or its data) or, when no
// broker answers, a retriable error. A later fetch at the end starts a new
// tail, at the leader the metadata names then.
//
// # Lock order
//
// Manager.mu, then the upstream Cluster's; a cache's lock is a leaf. No
// lock is held while notify runs or while a fetch is in flight.
package tail
