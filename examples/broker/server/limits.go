package server

import (
	"fmt"

	"go.uber.org/zap"
)

// The file-descriptor budget.
//
// Every connection holds a file descriptor, and so, with log.dirs, does
// every file of a partition's log: the active segment's .log and .index
// of each partition, always, and the sealed segments being read, up to a
// cap (logdir's cache of open handles). A broker that reaches its
// RLIMIT_NOFILE cannot accept, open a segment or write a file, and one
// that restarts on a log dir that needs more than the limit cannot even
// recover it. So the broker raises its soft limit to the hard one when it
// starts, and shares what it gets:
//
//	RLIMIT_NOFILE = reserve + max.connections + (with log.dirs) open sealed segments + 2 x partitions
//
// The reserve (fdReserve, plus fdPerPeer per other broker of a cluster)
// covers what the broker opens besides: its listeners, the log dir's lock
// the files it writes and fsyncs, the connections to its
// peers. max.connections defaults to what is left without log.dirs, and to
// half of it with them; the other half holds the logs: a quarter of it
// (fdSealedShare, between fdSealedMin and fdSealedMax) for sealed segments,
// the rest for the active ones, two per partition, which bounds
// max.broker.partitions. A topic creation that would take the broker past
// it is refused (POLICY_VIOLATION), so a log dir the broker accepted always
// fits under the same limit when it starts again, with room for its
// connections. If the limit was lowered since, the broker starts with
// fewer connections, or refuses to start if the log dir alone does not fit.
const (
	fdReserve      = 64
	fdPerPeer      = 4
	fdSealedShare  = 4 // a quarter of the log files' share
	fdSealedMin    = 8
	fdSealedMax    = 1024
	fdPerPartition = 2 // the active segment's .log and .index
	// defaultMaxBrokerPartitions bounds the partitions one broker holds
	// when nothing smaller does: each costs memory from its creation,
	// empty or not.
	defaultMaxBrokerPartitions = 100_000
)

// fdPlan is how the broker shares its file descriptors; immutable.
type fdPlan struct {
	limit          int // RLIMIT_NOFILE, raised
	reserve        int
	maxConnections int
	openSealed     int   // logdir's cache of sealed segment files; 0 without log.dirs
	maxPartitions  int32 // max.broker.partitions in effect
}

// planFiles shares limit file descriptors as the doc above says, given the
// partitions the log dir holds already (0 without log.dirs). It fails if
// the log dir needs more than the limit leaves it.
func planFiles(cfg Config, limit int, peers int, existing int) (fdPlan, error) {
	p := fdPlan{limit: limit, reserve: fdReserve + fdPerPeer*peers}
	budget := limit - p.reserve
	if budget < 1 {
		return p, fmt.Errorf("RLIMIT_NOFILE is %d: the broker needs more than %d file descriptors (ulimit -n)", limit, p.reserve)
	}
	p.maxConnections = cfg.MaxConnections
	p.maxPartitions = cfg.MaxBrokerPartitions
	if p.maxPartitions < 0 {
		p.maxPartitions = defaultMaxBrokerPartitions
	}
	if cfg.LogDirs == "" {
		if p.maxConnections < 0 {
			p.maxConnections = budget
		}
		return p, nil
	}
	if p.maxConnections < 0 {
		p.maxConnections = budget / 2
	}
	files := budget - p.maxConnections
	p.openSealed = min(max(files/fdSealedShare, fdSealedMin), fdSealedMax)
	need := fdPerPartition*existing + p.openSealed
	if need >= budget {
		return p, fmt.Errorf("log.dirs holds %d partitions, which with %d open sealed segments need %d file descriptors; "+
			"RLIMIT_NOFILE is %d, of which %d are reserved: raise it (ulimit -n)", existing, p.openSealed, need, limit, p.reserve)
	}
	if files < need {
		// The limit was lowered since the log dir was filled: it
		// still starts, with the connections it leaves.
		files, p.maxConnections = need, budget-need
	}
	p.maxPartitions = min(p.maxPartitions, int32((files-p.openSealed)/fdPerPartition))
	return p, nil
}

// log writes the plan at start, so that an operator sees the limits in
// effect, and warns where they fall short of what was asked.
func (p fdPlan) log(log *zap.Logger, cfg Config) {
	log.Info("file descriptor budget", zap.Int("rlimit_nofile", p.limit), zap.Int("reserve", p.reserve),
		zap.Int("max.connections", p.maxConnections), zap.Int("open_sealed_segments", p.openSealed),
		zap.Int32("max.broker.partitions", p.maxPartitions))
	if cfg.MaxConnections >= 0 && p.maxConnections < cfg.MaxConnections {
		log.Warn("max.connections lowered: the log dir's partitions need the file descriptors",
			zap.Int("asked", cfg.MaxConnections), zap.Int("max.connections", p.maxConnections))
	}
	if cfg.MaxBrokerPartitions >= 0 && p.maxPartitions < cfg.MaxBrokerPartitions {
		log.Warn("max.broker.partitions lowered to what RLIMIT_NOFILE allows",
			zap.Int32("asked", cfg.MaxBrokerPartitions), zap.Int32("max.broker.partitions", p.maxPartitions))
	}
	files := 0
	if cfg.LogDirs != "" {
		files = p.openSealed + fdPerPartition*int(p.maxPartitions)
	}
	if p.reserve+p.maxConnections+files > p.limit {
		log.Warn("max.connections exceeds what RLIMIT_NOFILE leaves: accepting will fail at the limit (and be retried)",
			zap.Int("max.connections", p.maxConnections), zap.Int("rlimit_nofile", p.limit))
	}
}
