// Package quota enforces the client quotas of the metadata image
// (package metadata's, set by AlterClientQuotas) as Kafka's
// ClientQuotaManager does: a Manager per quota type (producer_byte_rate
// on Produce requests, consumer_byte_rate on Fetch responses,
// request_percentage on the time requests take, Kafka's
// ClientRequestQuotaManager; controller_mutation_rate on the partitions
// created and deleted, Kafka's ControllerMutationQuotaManager) keeps each
// client's credit and says, of each request, how long its client must be
// throttled to fall back within its quota.
//
// # Whose rate
//
// A request's client is its principal's user and its client id. The quota
// that applies is the most specific one set (metadata.Image.ClientQuota,
// Kafka's order, /users/<user>/clients/<client-id> first,
// /clients/<default> last), and the rate it bounds is its scope's: a
// quota set on a user bounds all of the user's client ids together, one
// set on a default bounds each user or client id on its own. A client no
// quota applies to is not measured at all.
//
// # The bucket
//
// Each client holds a token bucket (Kafka's TokenBucket, which KIP-599
// brought for the controller's mutation quota): credit in bytes, refilled
// at the quota Q, up to Q over all the windows (quota.window.num of
// quota.window.size.seconds: 11 of 1s), spent by every request. A new
// client starts full, so its first burst may be all the windows' worth,
// about what Kafka's Rate let through at first (a burst measured over ten
// windows).
//
// Kafka measures byte-rate quotas with a Rate instead, a sum over the
// samples divided by at least ten windows, and that is where this package
// departs from it: under the Rate a client that sends as fast as it is let
// gets its quota only over whole cycles of eleven seconds, not smoothly.
// Each burst stays in the samples until its window expires, all at once,
// and then the client may send about ten windows' worth at once again and
// little after, so any 30s carries two or three bursts: 0.7 to 1.1 of the
// quota. The bucket refills as
// time passes instead of forgetting a window at a time: after its first
// burst such a client keeps within 5% of its quota over any 30s, with
// eleven windows as with two (TestSteadyRate). What a client sees is
// Kafka's: throttle_time_ms and a muted connection, never a refusal.
//
//	tokens = min(tokens + Q·elapsed, Q·n·W) - bytes     throttle = -tokens / Q
//
// # Throttle time
//
// A request is recorded, then its client's credit checked: in debt by D,
// it is throttled for D / Q, the time the refill takes to pay it, capped
// at quota.window.num × quota.window.size.seconds (Kafka's
// maxThrottleTimeMs). The debt beyond the cap stays to be paid by the next
// throttles. The broker answers at once, with the time in
// throttle_time_ms, and mutes the connection for it (KIP-219, kafkanet's
// Request.Throttle): a delayed operation ends the mute, no goroutine
// sleeps. A quota altered by AlterClientQuotas refills at its new value
// from the next request on, and a lower one cuts the credit to its own
// brim.
//
// # Controller mutations
//
// controller_mutation_rate (KIP-599) bounds the partitions a client
// creates (CreateTopics, CreatePartitions) and deletes (DeleteTopics) per
// second, one token a partition, in the same bucket. Its requests are
// charged topic by topic through a Mutations, as Kafka's controller
// charges them, in one of two modes. Strict, for the versions that know
// THROTTLING_QUOTA_EXCEEDED: a topic is taken whole while its client owes
// nothing, however far past its credit that takes it, and refused
// uncharged while it owes; the request is throttled only if a topic was
// refused, for the time the refill takes to pay the debt. Permissive, for
// older versions: every topic is taken, and a debt throttles. Unlike the
// other quotas' (below), this throttle is not capped: Kafka's is not.
//
//	strict:  tokens < 0 ? refuse, throttle = -tokens / Q : tokens -= partitions
//
// # Replication throttles
//
// Replication (KIP-73, Kafka's ReplicationQuotaManager) bounds the bytes a
// broker sends, as a leader, to followers out of the ISR
// (leader.replication.throttled.rate), or fetches, as a follower out of
// the ISR (follower.replication.throttled.rate), for the replicas its
// topics' leader.replication.throttled.replicas and
// follower.replication.throttled.replicas name. It is not a client's
// quota and takes no throttle time: the replica fetch skips a throttled
// partition while the rate is over the limit (package replica). It keeps
// Kafka's own measure, SimpleRate (rate.go): the bytes of the last
// quota.window.num windows over the time since the oldest began, at least
// one window. The bucket's reason above does not apply: a skipped fetch is
// retried at once, not muted for a throttle time, so the replication
// stays within a fetch of the limit.
//
//	rate = Σ samples / max(now - oldest.start, window)     throttle = listed && !inSync && rate > limit
//
// # Cost
//
// Recording is O(1) under the Manager's lock (it was O(quota.window.num)
// with the Rate), and at most eight map lookups to find the quota (none
// when the image holds no quota). A client's bucket is dropped once it has
// refilled to the brim (a new one would be the same), swept at most once
// per all the windows' span: memory follows the clients that sent in the
// last eleven seconds or are still paying a debt.
package quota
