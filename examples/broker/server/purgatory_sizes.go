package server

import (
	"github.com/gopurgatory/purgatory/examples/broker/replica"
	"github.com/gopurgatory/purgatory/purgatory"
)

// PurgatorySize is what one purgatory holds.
type PurgatorySize struct {
	// Pending is the number of operations waiting to be answered, each
	// once (purgatory.Pending).
	Pending int
	// Watched is the number of watch entries: an operation counts once
	// per key it waits on, until a check or purge drops it after it
	// completed (Kafka's PurgatorySize).
	Watched int
}

// PurgatorySizes returns the size of each of the broker's purgatories, by
// name ("Fetch", "Produce", "DeleteRecords", and the group coordinator's "Rebalance",
// "Heartbeat", "OffsetExpiration", and the share groups' "ShareFetch"), for tests and tools that check that
// waiting requests are answered and their memory returned. O(shards) per
// purgatory.
func (s *Server) PurgatorySizes() map[string]PurgatorySize {
	sizes := make(map[string]PurgatorySize, 6)
	for _, p := range []*purgatory.Purgatory[replica.TP]{s.replicas.Fetches(), s.replicas.Produces(), s.replicas.Deletes()} {
		sizes[p.Name()] = PurgatorySize{Pending: p.Pending(), Watched: p.Watched()}
	}
	for name, g := range s.groups.PurgatorySizes() {
		sizes[name] = PurgatorySize(g)
	}
	sizes[s.share.fetches.Name()] = PurgatorySize{Pending: s.share.fetches.Pending(), Watched: s.share.fetches.Watched()}
	return sizes
}
