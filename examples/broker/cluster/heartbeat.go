package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// heartbeat keeps this broker's session at the active controller alive
// (Kafka's BrokerLifecycleManager): a BrokerHeartbeat every
// broker.heartbeat.interval.ms with this broker's epoch (its incarnation:
// the time it started, so that a restarted broker is a new registration),
// sent to the quorum's leader, or handed to this broker's own controller
// when it is the leader. A broker the controller fenced (its session
// expired during a pause) is registered again by its next heartbeat.
// Until the image it applies holds them, each heartbeat first registers
// this broker's endpoints (registration.go).
func (ps *peers) heartbeat() {
	t := time.NewTicker(ps.m.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		ps.heartbeatOnce()
		ps.noticeSession()
		select {
		case <-ps.m.ctx.Done():
			return
		case <-t.C:
		case <-ps.kick:
		}
	}
}

// kickHeartbeat sends a heartbeat now: the controller changed, and the new
// one gave this broker a fresh session that it should not let run down.
func (ps *peers) kickHeartbeat() {
	select {
	case ps.kick <- struct{}{}:
	default:
	}
}

func (ps *peers) heartbeatOnce() {
	if ps.stopping.Load() {
		return // in controlled shutdown: a heartbeat would register it again
	}
	m := ps.m
	ctx, cancel := context.WithTimeout(m.ctx, m.cfg.HeartbeatInterval)
	defer cancel()
	leader, self := m.meta.Leader()
	if leader < 0 {
		return // an election is on; the new leader's callback kicks us
	}
	sent, current := ps.clock(), ps.sessionCurrent()
	err := ps.register(ctx, leader, self)
	if err != nil && m.ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
		m.log.Info("registering this broker's endpoints with the controller", zap.Int32("controller", leader), zap.Error(err))
	}
	switch {
	case self:
		err = m.ctrl.Heartbeat(ctx, m.brokers.self, ps.epoch)
		if err == nil && m.meta.VerifyLeader() == nil {
			ps.renewed(sent) // its own image is the controller's
		}
	default:
		req := kmsg.NewPtrBrokerHeartbeatRequest()
		req.BrokerID, req.BrokerEpoch = m.brokers.self, ps.epoch
		req.CurrentMetadataOffset = int64(m.Image().Index)
		var resp kmsg.Response
		if resp, err = ps.request(ctx, leader, req); err == nil {
			hb := resp.(*kmsg.BrokerHeartbeatResponse)
			if err = kerr.ErrorForCode(hb.ErrorCode); err == nil && (current || hb.IsCaughtUp) {
				ps.renewed(sent)
			}
		}
	}
	if err != nil && m.ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
		m.log.Info("heartbeat to the controller", zap.Int32("controller", leader), zap.Error(err))
	}
}

// controlledShutdown asks the active controller to fence this broker now
// (Kafka's controlled shutdown, a BrokerHeartbeat with want_shutdown), so
// that its leaderships move to the other replicas of their ISRs while it
// still answers, and waits until it has applied that here: what waits in
// its purgatories on those partitions is then answered
// NOT_LEADER_OR_FOLLOWER, which clients retry at the new leaders. If it
// leads the metadata quorum, it hands that over too. Bounded by ctx and
// by broker.session.timeout.ms, past which its session would have expired
// anyway; a controller that cannot be reached (the quorum is gone) skips
// it.
func (ps *peers) controlledShutdown(ctx context.Context) {
	m := ps.m
	ps.stopping.Store(true)
	ctx, cancel := context.WithTimeout(ctx, m.cfg.SessionTimeout)
	defer cancel()
	self := m.brokers.self
	leader, isLeader := m.meta.Leader()
	var err error
	switch {
	case leader < 0:
		return
	case isLeader:
		err = m.ctrl.Shutdown(ctx, self, ps.epoch)
	default:
		req := kmsg.NewPtrBrokerHeartbeatRequest()
		req.BrokerID, req.BrokerEpoch, req.WantShutdown = self, ps.epoch, true
		var resp kmsg.Response
		if resp, err = ps.request(ctx, leader, req); err == nil {
			err = kerr.ErrorForCode(resp.(*kmsg.BrokerHeartbeatResponse).ErrorCode)
		}
	}
	if err != nil {
		m.log.Info("controlled shutdown: the controller did not fence this broker", zap.Error(err))
		return
	}
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for !m.Image().Fenced(self) {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	m.log.Info("controlled shutdown: leaderships moved")
	if m.meta.IsLeader() {
		if err := m.meta.TransferLeadership(); err != nil {
			m.log.Info("controlled shutdown: handing over the metadata quorum", zap.Error(err))
		}
	}
}
