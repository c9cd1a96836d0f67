package controller

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/timer"
)

// rebalanceConfig is auto.leader.rebalance.enable and its two settings.
type rebalanceConfig struct {
	enable   bool
	interval time.Duration // leader.imbalance.check.interval.seconds
	pct      int           // leader.imbalance.per.broker.percentage
}

// ElectLeaders elects leaders for parts by typ (Kafka's ElectLeaders) and
// commits the elections that can be made, in one record; it returns the
// partitions it answers for and each one's result (nil: elected, else
// metadata.Elect's error). With parts nil it tries every partition and, as
// Kafka's controller, leaves out those that need no election. The error
// is the decision's: ErrNotController, ErrClosed, the log's.
func (c *Controller) ElectLeaders(ctx context.Context, typ metadata.ElectionType, parts []metadata.PartitionRef) ([]metadata.PartitionRef, []error, error) {
	all := parts == nil
	var results []error
	_, err := c.decide(ctx, func(im *metadata.Image) (metadata.Record, error) {
		if all {
			parts = everyPartition(im)
		}
		var rec metadata.Record
		rec, results = metadata.Elect(im, typ, parts)
		return rec, nil
	})
	if err != nil {
		return nil, nil, err
	}
	if all {
		kept := parts[:0]
		keptResults := results[:0]
		for i, ref := range parts {
			if !errors.Is(results[i], metadata.ErrElectionNotNeeded) {
				kept, keptResults = append(kept, ref), append(keptResults, results[i])
			}
		}
		parts, results = kept, keptResults
	}
	return parts, results, nil
}

// everyPartition lists every partition of im.
func everyPartition(im *metadata.Image) []metadata.PartitionRef {
	var out []metadata.PartitionRef
	for _, t := range im.Topics() {
		for i := range t.Partitions {
			out = append(out, metadata.PartitionRef{Topic: t.ID, Index: int32(i)})
		}
	}
	return out
}

// rebalancer is the active controller's periodic leader imbalance check,
// on the library's timer (a fixed delay, as Kafka's scheduler runs it).
type rebalancer struct {
	p       *timer.Periodic
	running atomic.Bool // a check is in flight: the next run skips
}

// startRebalanceLocked starts the imbalance check of the term just
// activated. Its runs only start a goroutine: the check proposes, and
// waits for the quorum, which the timer's goroutine must never do (see
// the package documentation's lock order).
//
// REQUIRES: c.mu held, c.active.
func (c *Controller) startRebalanceLocked(term uint64) {
	if !c.cfg.rebalance.enable || c.tm == nil {
		return
	}
	r := &rebalancer{}
	p, err := c.tm.ScheduleWithFixedDelay(c.cfg.rebalance.interval, c.cfg.rebalance.interval, func() {
		if !r.running.CompareAndSwap(false, true) {
			return
		}
		c.wg.Add(1) // before Close's Wait: Close stops the timer first
		go func() {
			defer c.wg.Done()
			defer r.running.Store(false)
			c.rebalance(term)
		}()
	})
	if err != nil {
		c.zlog.Warn("controller: scheduling the leader imbalance check", zap.Error(err))
		return
	}
	r.p = p
	c.rebalancer = r
}

// stopRebalanceLocked ends the imbalance check of the term that ends. A
// check in flight finds the controller inactive, or the term moved on,
// and commits nothing.
//
// REQUIRES: c.mu held.
func (c *Controller) stopRebalanceLocked() {
	if c.rebalancer != nil {
		c.rebalancer.p.Stop()
		c.rebalancer = nil
	}
}

// rebalance elects the preferred replicas of the imbalanced brokers'
// partitions (metadata.Imbalanced), if term is still the controller's.
func (c *Controller) rebalance(term uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.session)
	defer cancel()
	var moved []metadata.PartitionRef
	_, err := c.decide(ctx, func(im *metadata.Image) (metadata.Record, error) {
		c.mu.Lock()
		current := c.term == term
		c.mu.Unlock()
		if !current {
			return metadata.Record{}, nil
		}
		moved = metadata.Imbalanced(im, c.cfg.rebalance.pct)
		rec, _ := metadata.Elect(im, metadata.ElectPreferred, moved)
		return rec, nil
	})
	switch {
	case err != nil:
		c.zlog.Info("controller: the leader imbalance check's elections were not committed", zap.Error(err))
	case len(moved) > 0:
		c.zlog.Info("controller: leadership returned to preferred replicas", zap.Int("partitions", len(moved)))
	}
}
