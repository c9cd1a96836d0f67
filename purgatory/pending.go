package purgatory

// Pending returns the number of operations submitted and not yet answered:
// those waiting for their condition, their deadline, their context or
// Close, and those CancelForKey handed back that their caller has not
// answered yet. An operation counts once however many keys it is watched
// under, from its submission until its callbacks have run; one completed
// by its first try at submission never counts. This is the count to read
// as "waiting now" (Watched counts watch entries, Delayed deadlines).
// Exact when nothing is being submitted or completed meanwhile;
// O(shards of the watch lists), each under its lock.
func (p *Purgatory[K]) Pending() int {
	done := p.obs.tally.answered() // first: an operation is counted submitted before it completes
	return int(max(0, p.w.Submitted()-done))
}
