package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/cluster"
	"github.com/gopurgatory/purgatory/examples/broker/controller"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/replica"
	"github.com/gopurgatory/purgatory/examples/internal/authz"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

// The handlers' view of the cluster: the metadata log's image as this
// broker has applied it and the controller, both package cluster's
// (cluster.Member); the partitions' state as this broker may act on it,
// package replica's.

// controllerTimeout bounds a decision's wait for the quorum.
const controllerTimeout = cluster.ControllerTimeout

// decisionContext bounds a controller decision by the request's
// timeout_ms, when positive, and by controllerTimeout always.
func decisionContext(timeoutMillis int32) (context.Context, context.CancelFunc) {
	timeout := controllerTimeout
	if t := time.Duration(timeoutMillis) * time.Millisecond; t > 0 {
		timeout = min(timeout, t)
	}
	return context.WithTimeout(context.Background(), timeout)
}

// refuseDecision answers req, whose decision the controller did not
// commit (err), with err's code wherever its response carries one,
// REQUEST_TIMED_OUT past the decision's deadline, and logs what was not
// committed.
func refuseDecision(r *kafkanet.Request, req kmsg.Request, what string, err error) {
	code := errorCode(err)
	if errors.Is(err, context.DeadlineExceeded) {
		code = kerr.RequestTimedOut.Code
	}
	r.Logger().Info(what+" not committed", zap.Error(err))
	r.Respond(authz.ErrorResponse(req, code))
}

// image returns the cluster's metadata as this broker has applied it.
func (s *Server) image() *metadata.Image { return s.member.Image() }

// registered reports whether this broker's registration is in the image
// at its current epoch (cluster.Member.Registered): until it is, it leads
// nothing.
func (s *Server) registered() bool { return s.member.Registered() }

// ctrl returns this broker's controller, which decides only while active.
func (s *Server) ctrl() *controller.Controller { return s.member.Controller() }

// applied is the metadata log's callback, on its apply goroutine: the
// authorizer follows the ACL bindings, a broker alone keeps them and the
// SCRAM credentials in log.dirs (authz.go), the storage each record
// (package replica), then the coordinators follow their state partitions'
// leaders (package coordinator).
func (s *Server) applied(before, after *metadata.Image, rec *metadata.Record) {
	s.followACLs(after, rec)
	s.keepSecurity(after, rec)
	defaults := s.followBrokerConfigs(after, rec) // before the topics: one created now takes the new defaults
	s.replicas.Apply(before, after, rec)
	if defaults {
		s.replicas.RefreshConfigs(after)
	}
	s.coords.Follow(after)
}

// IsController reports whether this broker is the active controller, for
// tests and tools.
func (s *Server) IsController() bool { return s.member.IsController() }

// SnapshotMetadata writes a snapshot of this broker's copy of the metadata
// log, as its quorum does on its own every few thousand records: a restart
// then restores the metadata from it. For tests and tools.
func (s *Server) SnapshotMetadata() error { return s.member.SnapshotMetadata() }

// ReplicaInfo is what a broker holds of one partition: its placement,
// leader, leader epoch and ISR as the metadata log has them here, and its
// own replica's offsets.
type ReplicaInfo = replica.Info

// Replica returns what this broker holds of topic's partition, for tests
// and tools that watch replication: a follower's log end, a leader's ISR.
func (s *Server) Replica(topic string, partition int32) (ReplicaInfo, error) {
	return s.replicas.Info(topic, partition)
}

// endpoint returns where a client of r's listener reaches broker n: this
// broker at that listener's advertised address; another at its --cluster
// address on the inter-broker listener, or at the endpoint of the same
// name it registered (BrokerRegistration) on the others. ok is false for
// a broker that has registered no such listener: it is not named there,
// as Kafka omits it.
func (s *Server) endpoint(r *kafkanet.Request, n cluster.Node) (host string, port int32, ok bool) {
	ln := r.Conn().Listener()
	switch {
	case n.ID == s.cfg.NodeID && ln != nil:
		host, port = ln.Advertised()
		return host, port, true
	case ln == nil || ln == s.ln:
		return n.Host, n.Port, true
	}
	e, ok := s.image().Endpoint(n.ID, ln.Name())
	return e.Host, e.Port, ok
}

// endpoints returns this broker's listeners as it registers them with
// the controller.
func (s *Server) endpoints() []metadata.Endpoint {
	out := make([]metadata.Endpoint, 0, len(s.lns))
	for _, ln := range s.lns {
		host, port := ln.Advertised()
		out = append(out, metadata.Endpoint{Listener: ln.Name(), Host: host, Port: port, Protocol: string(ln.Protocol())})
	}
	return out
}

// placeInterBroker puts the inter-broker listener of specs at this
// broker's --cluster address, which the other brokers dial and name it
// at: it listens there unless --listeners says otherwise, and advertises
// it always.
func (s *Server) placeInterBroker(specs []kafkanet.ListenerConfig) error {
	self, _ := s.brokers.Node(s.cfg.NodeID)
	want := interBroker(specs, s.cfg.InterBrokerListener).Name
	for i := range specs {
		if specs[i].Name != want {
			continue
		}
		if s.cfg.Listener == Default().Listener {
			specs[i].Addr = self.Addr() // its --cluster entry, unless told otherwise
		}
		if specs[i].Advertised != "" && specs[i].Advertised != self.Addr() {
			return fmt.Errorf("advertised.listeners: %s advertises %s, but --cluster names broker %d at %s",
				want, specs[i].Advertised, self.ID, self.Addr())
		}
		specs[i].Advertised = self.Addr()
	}
	return nil
}

// atController answers r, a request that only the active controller
// serves and that clients send to any broker (CreateAcls, DeleteAcls),
// when this broker is not that controller: it forwards r to the broker
// leading the metadata quorum, on a goroutine of the membership's, and
// answers with that broker's response, as Kafka 4's brokers forward such
// requests to their controller; while the quorum elects a leader (after
// a start, or the controller's loss), it waits for one, up to the
// controller timeout. One that no leader is known for by then, that a
// peer forwarded already (never forwarded twice, so that two brokers that
// each believe the other leads do not pass it to and fro), or that cannot
// reach the leader, is answered NOT_CONTROLLER, which clients retry. It
// reports false when this broker is the active controller: the caller
// serves r.
func (s *Server) atController(r *kafkanet.Request) bool { return s.forwardToController(r, r.Msg, nil) }

// forwardToController is atController for a request whose checks this
// broker makes itself before it forwards what passed them (the
// controller sees the forwarding broker's principal, not the client's):
// it forwards req, what is left of r's, and hands every answer sent to r,
// the controller's or NOT_CONTROLLER, to finish first, if not nil, which
// adds what this broker answered itself.
func (s *Server) forwardToController(r *kafkanet.Request, req kmsg.Request, finish func(kmsg.Response)) bool {
	if s.ctrl().IsActive() {
		return false
	}
	version := r.Msg.GetVersion()
	respond := func(resp kmsg.Response) {
		resp.SetVersion(version)
		if finish != nil {
			finish(resp)
		}
		r.Respond(resp)
	}
	notController := func() { respond(authz.ErrorResponse(req, kerr.NotController.Code)) }
	if s.member.Alone() || cluster.FromPeer(r.ClientID) {
		notController()
		return true
	}
	s.member.Go(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, controllerTimeout)
		defer cancel()
		leader, self, err := s.member.AwaitLeader(ctx) // an election in progress: its end
		if err != nil || self {
			notController() // or this broker just won it, and its controller is not active yet
			return
		}
		resp, err := s.member.RequestOn(ctx, cluster.Forwarding, leader, req) // at the version the two brokers agree on
		if err != nil {
			r.Logger().Info("forwarding a request to the controller", zap.Int32("controller", leader), zap.Error(err))
			notController()
			return
		}
		respond(resp)
	})
	return true
}
