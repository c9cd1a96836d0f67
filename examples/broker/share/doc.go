// Package share is the broker's share-partition state (KIP-932; Apache
// Kafka's SharePartition and SharePartitionManager): for each share group
// and partition it consumes, which records are in flight, with whom, and
// how often each was delivered. It knows nothing of the wire or the log:
// package server reads the records a member acquires and answers the
// ShareFetch and ShareAcknowledge requests.
//
// # The window
//
// A Partition keeps a window of offsets [start, end): the share-partition
// start offset (SPSO) and end offset (SPEO). Below start every record is
// done with; from end on none has been delivered yet. Each record of the
// window is in one of Kafka's states:
//
//	AVAILABLE ──acquire──▶ ACQUIRED ──accept──▶ ACKNOWLEDGED
//	    ▲                     │
//	    └─release, lock expiry┤ (delivery count below the limit)
//	                          └─reject, or the limit reached──▶ ARCHIVED
//
// Acquiring a record counts a delivery. A record released (by the member,
// by the expiry of its acquisition lock, or by its member leaving) whose
// delivery count has reached share.delivery.count.limit is archived
// instead of made available again. The start moves past every
// acknowledged or archived record at the head of the window. No
// acquisition of new records starts once the window holds
// group.share.partition.max.record.locks records, so a member that
// acquires nothing new until the head is acknowledged holds the partition
// back, as in Kafka; as in Kafka too, the bound is on where an
// acquisition starts: one that a share fetch rounds up to the end of a
// log batch takes the batch whole, past it (partition.go's
// AcquireAppend), so that a batch is read and handed out once. A share
// fetch in KIP-1206's record_limit mode (RecordLimit) rounds nothing up:
// it acquires max_records records at most, cutting a batch, and never
// passes the bound.
//
// # Acquisition locks
//
// Every acquisition (a run of records acquired by one member in one call)
// holds one lock, due after share.record.lock.duration.ms. The locks a
// member takes in a partition that fall due in one tick of the library's
// timing wheel (timer.Timer) share one task of it, due at the end of that
// tick, which is when the timer would run a task of each anyway
// (group.go): a broker acquiring thousands of times a millisecond
// schedules a task a member and millisecond, not one per acquisition.
// Acknowledging a record takes it out of its group in O(1), and the
// group's last record to go cancels the task; the task's expiry releases
// the records still held under the group. A renewal moves the records it
// names to their member's group of the new deadline.
//
// The path is kept free of allocation (lock.go, group.go): a record names
// its group by index, so the window is a slice of 8-byte records the
// collector never scans and a lock takes no memory of its own; the groups
// live in a slab of fixed chunks per partition, the timer's task embedded
// in each, reused from a free list once a group covers no record and no
// run of its task is to come, and name their member by an entry of the
// partition's holders. Acquiring looks for records made available again
// from the lowest one only, and acquiring new records appends to the
// window: neither costs in proportion to the records in flight.
//
// # Wake-ups
//
// Whatever makes records acquirable (a release, an expiry, the start
// moving so that the window may grow) calls the Manager's wake function
// with the partition's key, after the Partition's lock is released, so
// that share fetches waiting on it in a purgatory are tried again.
//
// # Lock order
//
// Manager.mu, then a Partition's mu. The Persister is called with no lock
// held, and its callbacks take a Partition's mu. The timer is called with a
// Partition's mu held (Now, ScheduleAt and Cancel take only the timer's
// own locks); an expiring group of locks takes the Partition's mu on a
// timer worker. The wake function is called with no lock held.
//
// # Durable
//
// With a Persister (Config.Persister; the broker's is the share
// coordinator, package sharestate, on __share_group_state) the state
// outlives its leader: a partition reads its state before it serves, and
// every acknowledgement, lock expiry and release is written, the caller
// of Persist told once it is durable (persist.go). A broker that
// restarts, or a partition's new leader, goes on from the last write:
// acknowledged records stay done, none is skipped, and records acquired
// but not acknowledged come back available with their delivery counts.
// Acquisitions are not written (as in Kafka): the delivery counts of those
// since the last write are lost with their leader. Without a Persister
// the state lives in memory only.
package share
