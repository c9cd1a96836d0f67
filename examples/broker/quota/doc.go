// Package quota enforces the client quotas of the metadata image
// (package metadata's, set by AlterClientQuotas) as Kafka's
// ClientQuotaManager does: a Manager per quota type (producer_byte_rate
// on Produce requests, consumer_byte_rate on Fetch responses) measures
// each client's rate and says, of each request, how long its client must
// be throttled to fall back within its quota.
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
// # The rate
//
// A rate is Kafka's Rate over a SampledStat: quota.window.num samples
// (11) of quota.window.size.seconds (1s) each. A value is added to the
// current sample, which a new one replaces once it is a window old; a
// sample older than all the windows together counts nothing. The rate is
// the samples' sum over the time they span, counted as at least
// quota.window.num - 1 windows: a client's first burst is measured over
// ten seconds, as in Kafka, and the rate a client keeps is measured over
// the last ten to eleven.
//
// So a client that sends as fast as it is let gets its quota over whole
// cycles of the windows, not smoothly: once its burst leaves the samples
// it may send about quota.window.num - 1 windows' worth at once again,
// then little until that burst leaves in turn, as Kafka's clients see.
// Fewer windows make the cycle shorter (two windows of a second: within
// 5% over 30s; TestSteadyRate).
//
//	samples: [s0 1s][s1 1s]...[s10 current]   rate = Σ / max(now - s0.start, 10s)
//
// # Throttle time
//
// A request is recorded, then its rate checked: over the quota Q at rate
// R, its client is throttled for (R - Q) / Q × W, W the time the rate
// spans, the time after which the rate falls back to Q if the client
// sends nothing more (Kafka's QuotaUtils.throttleTime), capped at
// quota.window.num × quota.window.size.seconds. The broker answers at
// once, with the time in throttle_time_ms, and mutes the connection for
// it (KIP-219, kafkanet's Request.Throttle): a delayed operation ends the
// mute, no goroutine sleeps.
//
// # Cost
//
// Recording is O(quota.window.num) under the Manager's lock, and at most
// eight map lookups to find the quota (none when the image holds no
// quota). A client's rate is dropped once it has recorded nothing for
// all the windows (it would count nothing), swept at most once per that
// span: memory follows the clients active in the last eleven seconds.
package quota
