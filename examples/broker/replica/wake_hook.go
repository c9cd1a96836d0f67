package replica

import "github.com/gopurgatory/purgatory/examples/broker/storage"

// OnWake has f called by every Wake of a partition, after the Manager's
// own purgatories are checked, with no lock held: what waits on a
// partition outside the Manager (a share fetch, in the broker's share
// purgatory) hears of the same appends, high watermark moves and
// leadership changes. A later call replaces f; nil removes it.
func (m *Manager) OnWake(f func(p *storage.Partition)) {
	if f == nil {
		m.alsoWake.Store(nil)
		return
	}
	m.alsoWake.Store(&f)
}
