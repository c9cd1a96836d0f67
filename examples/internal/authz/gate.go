package authz

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/acl"
)

// Gate returns the code req is answered with, wherever its response
// carries one (ErrorResponse), when its client may not make it at all:
// the checks on a whole request of the table (package doc), which run
// before the request is handled, routed or forwarded. 0 hands it on; so
// does an API without such a check, whose checks are per topic, group or
// transactional id. Free without an authorizer.
func Gate(c Access, req kmsg.Request) int16 {
	if !c.On() {
		return 0
	}
	if check := gates[kmsg.Key(req.Key())]; check != nil {
		return check(c, req)
	}
	return 0
}

// Gated reports whether key has a check on its whole request.
func Gated(key kmsg.Key) bool { return gates[key] != nil }

// gates are the checks on a whole request (see the table of the package
// doc): each returns the code the request is answered with, or 0.
var gates = map[kmsg.Key]func(c Access, req kmsg.Request) int16{
	kmsg.Produce: func(c Access, req kmsg.Request) int16 {
		p := req.(*kmsg.ProduceRequest)
		if !transactionalBatches(p) {
			return 0
		}
		if p.TransactionID == nil {
			return kerr.TransactionalIDAuthorizationFailed.Code
		}
		return c.TxnCode(*p.TransactionID)
	},
	kmsg.OffsetCommit: func(c Access, req kmsg.Request) int16 {
		return c.GroupCode(kmsg.ACLOperationRead, req.(*kmsg.OffsetCommitRequest).Group)
	},
	kmsg.OffsetFetch: func(c Access, req kmsg.Request) int16 {
		if f := req.(*kmsg.OffsetFetchRequest); f.Version < 8 {
			return c.GroupCode(kmsg.ACLOperationDescribe, f.Group)
		}
		return 0 // each group of v8+ in its handler
	},
	kmsg.JoinGroup: func(c Access, req kmsg.Request) int16 {
		return c.GroupCode(kmsg.ACLOperationRead, req.(*kmsg.JoinGroupRequest).Group)
	},
	kmsg.Heartbeat: func(c Access, req kmsg.Request) int16 {
		return c.GroupCode(kmsg.ACLOperationRead, req.(*kmsg.HeartbeatRequest).Group)
	},
	kmsg.ConsumerGroupHeartbeat: func(c Access, req kmsg.Request) int16 {
		return c.GroupCode(kmsg.ACLOperationRead, req.(*kmsg.ConsumerGroupHeartbeatRequest).Group)
	},
	kmsg.LeaveGroup: func(c Access, req kmsg.Request) int16 {
		return c.GroupCode(kmsg.ACLOperationRead, req.(*kmsg.LeaveGroupRequest).Group)
	},
	kmsg.SyncGroup: func(c Access, req kmsg.Request) int16 {
		return c.GroupCode(kmsg.ACLOperationRead, req.(*kmsg.SyncGroupRequest).Group)
	},
	kmsg.InitProducerID: func(c Access, req kmsg.Request) int16 {
		if id := req.(*kmsg.InitProducerIDRequest).TransactionalID; id != nil {
			return c.TxnCode(*id)
		}
		// KIP-679: an idempotent producer needs IDEMPOTENT_WRITE on the
		// cluster, or WRITE on some topic (Kafka 3.0+).
		if c.Sees(kmsg.ACLOperationIdempotentWrite, kmsg.ACLResourceTypeCluster, acl.ClusterName) ||
			c.SeesAny(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic) {
			return 0
		}
		return c.ClusterCode(kmsg.ACLOperationIdempotentWrite)
	},
	kmsg.AddPartitionsToTxn: func(c Access, req kmsg.Request) int16 {
		if a := req.(*kmsg.AddPartitionsToTxnRequest); a.Version < 4 {
			return c.TxnCode(a.TransactionalID)
		}
		return c.ClusterCode(kmsg.ACLOperationClusterAction) // a broker's KIP-890 check; each transaction in the handler
	},
	kmsg.AddOffsetsToTxn: func(c Access, req kmsg.Request) int16 {
		a := req.(*kmsg.AddOffsetsToTxnRequest)
		if code := c.TxnCode(a.TransactionalID); code != 0 {
			return code
		}
		return c.GroupCode(kmsg.ACLOperationRead, a.Group)
	},
	kmsg.EndTxn: func(c Access, req kmsg.Request) int16 {
		return c.TxnCode(req.(*kmsg.EndTxnRequest).TransactionalID)
	},
	kmsg.WriteTxnMarkers: clusterGate(kmsg.ACLOperationClusterAction),
	kmsg.TxnOffsetCommit: func(c Access, req kmsg.Request) int16 {
		t := req.(*kmsg.TxnOffsetCommitRequest)
		if code := c.TxnCode(t.TransactionalID); code != 0 {
			return code
		}
		return c.GroupCode(kmsg.ACLOperationRead, t.Group)
	},
	kmsg.DescribeACLs:               clusterGate(kmsg.ACLOperationDescribe),
	kmsg.CreateACLs:                 clusterGate(kmsg.ACLOperationAlter),
	kmsg.DeleteACLs:                 clusterGate(kmsg.ACLOperationAlter),
	kmsg.ElectLeaders:               clusterGate(kmsg.ACLOperationAlter),
	kmsg.AlterPartitionAssignments:  clusterGate(kmsg.ACLOperationAlter),
	kmsg.ListPartitionReassignments: clusterGate(kmsg.ACLOperationDescribe),
	kmsg.OffsetDelete: func(c Access, req kmsg.Request) int16 {
		return c.GroupCode(kmsg.ACLOperationDelete, req.(*kmsg.OffsetDeleteRequest).Group)
	},
	kmsg.DescribeClientQuotas:         clusterGate(kmsg.ACLOperationDescribeConfigs),
	kmsg.AlterClientQuotas:            clusterGate(kmsg.ACLOperationAlterConfigs),
	kmsg.DescribeUserSCRAMCredentials: clusterGate(kmsg.ACLOperationDescribe),
	kmsg.AlterUserSCRAMCredentials:    clusterGate(kmsg.ACLOperationAlter),
	kmsg.AlterPartition:               clusterGate(kmsg.ACLOperationClusterAction),
	kmsg.BrokerRegistration:           clusterGate(kmsg.ACLOperationClusterAction),
	kmsg.BrokerHeartbeat:              clusterGate(kmsg.ACLOperationClusterAction),
	// The share coordinator's RPCs, which share partitions' leaders send.
	kmsg.InitializeShareGroupState:  clusterGate(kmsg.ACLOperationClusterAction),
	kmsg.ReadShareGroupState:        clusterGate(kmsg.ACLOperationClusterAction),
	kmsg.WriteShareGroupState:       clusterGate(kmsg.ACLOperationClusterAction),
	kmsg.DeleteShareGroupState:      clusterGate(kmsg.ACLOperationClusterAction),
	kmsg.ReadShareGroupStateSummary: clusterGate(kmsg.ACLOperationClusterAction),
}

// clusterGate is the check of op on the cluster.
func clusterGate(op kmsg.ACLOperation) func(Access, kmsg.Request) int16 {
	return func(c Access, _ kmsg.Request) int16 { return c.ClusterCode(op) }
}

// transactionalBatches reports whether a produce holds a transactional
// batch (Kafka's RequestUtils.hasTransactionalRecords): one whose header
// has the transactional attribute and a producer id. Only the header of
// each partition's first batch is read, O(partitions): a client writes a
// partition's batches of one produce in one transaction or none.
func transactionalBatches(p *kmsg.ProduceRequest) bool {
	const transactional = 0x10 // the attributes' bit
	for _, t := range p.Topics {
		for _, rp := range t.Partitions {
			var b kmsg.RecordBatch
			if b.ReadFrom(rp.Records) == nil && b.Attributes&transactional != 0 && b.ProducerID >= 0 {
				return true
			}
		}
	}
	return false
}
