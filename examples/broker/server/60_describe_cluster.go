package server

// DescribeCluster: v0-v2.
//
// The cluster as Metadata describes it, without topics (KIP-700): its id,
// the active controller (the quorum's leader, -1 during an election) and
// each broker that is not fenced, at its address on the listener the
// request came in on; from v2, with include_fenced_brokers, the fenced
// ones too, marked (KIP-1073). Only the brokers' endpoints are served
// (endpoint_type 1, KIP-919): a broker is not a KRaft controller's
// listener, so endpoint_type 2 is UNSUPPORTED_ENDPOINT_TYPE, as Kafka's
// brokers answer it. Racks are null: brokers have none.
//
// Authorization: none for the request, as Kafka; the cluster's
// authorized operations (KIP-430), when asked for, are those the client
// has if it may DESCRIBE the cluster, else 0.

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/internal/acl"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.DescribeCluster, 0, 2, (*Server).handleDescribeCluster) }

// endpointTypeBroker is KIP-919's endpoint_type for brokers' listeners.
const endpointTypeBroker = 1

// operationsNotRequested is KIP-430's authorized operations when the
// client did not ask for them.
const operationsNotRequested = math.MinInt32

func (s *Server) handleDescribeCluster(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	if req.Version >= 1 {
		resp.EndpointType = req.EndpointType
		if req.EndpointType != endpointTypeBroker {
			resp.ErrorCode = kerr.UnsupportedEndpointType.Code
			msg := "brokers serve endpoint type 1 (brokers) only"
			resp.ErrorMessage = &msg
			r.Respond(resp)
			return
		}
	}
	im := s.image()
	resp.ClusterID = s.clusterID(im)
	resp.ControllerID, _ = s.member.Leader()
	for _, b := range s.describedBrokers(r, im, req.Version >= 2 && req.IncludeFencedBrokers) {
		db := kmsg.NewDescribeClusterResponseBroker()
		db.NodeID, db.Host, db.Port, db.IsFenced = b.id, b.host, b.port, b.fenced
		resp.Brokers = append(resp.Brokers, db)
	}
	resp.ClusterAuthorizedOperations = clusterOperations(s.access(r), req.IncludeClusterAuthorizedOperations)
	r.Respond(resp)
}

// describedBroker is a broker as Metadata and DescribeCluster give it.
type describedBroker struct {
	id     int32
	host   string
	port   int32
	fenced bool
}

// describedBrokers lists the brokers of --cluster that im has not fenced
// (with fenced, those too), each at its address on the listener r came
// in on; a broker without an endpoint there is left out.
func (s *Server) describedBrokers(r *kafkanet.Request, im *metadata.Image, fenced bool) []describedBroker {
	var out []describedBroker
	for _, n := range s.brokers.Nodes() {
		f := im.Fenced(n.ID)
		if f && !fenced {
			continue
		}
		if host, port, ok := s.endpoint(r, n); ok {
			out = append(out, describedBroker{id: n.ID, host: host, port: port, fenced: f})
		}
	}
	return out
}

// clusterID is the cluster id the metadata log holds, or before the first
// controller committed one, the one this broker starts with.
func (s *Server) clusterID(im *metadata.Image) string {
	if im.ClusterID == "" {
		return s.data.clusterID
	}
	return im.ClusterID
}

// clusterOperations is KIP-430's cluster_authorized_operations: Kafka's
// "not requested" (-2147483648) unless asked, 0 for a client that may not
// DESCRIBE the cluster, else its operations on it.
func clusterOperations(c access, asked bool) int32 {
	switch {
	case !asked:
		return operationsNotRequested
	case !c.Allows(opDescribe, clusterRes, acl.ClusterName):
		return 0
	}
	return c.Operations(clusterRes, acl.ClusterName)
}
