package acl

import (
	"math/bits"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// OperationSet is a set of operations, bit i standing for the operation of
// code i (kmsg.ACLOperationRead is 3, so bit 3): the form of KIP-430's
// authorized_operations fields. The zero value is the empty set.
type OperationSet uint32

// allOperations is every bit: what an ALL binding covers.
const allOperations = ^OperationSet(0)

// Operations returns the set of ops; an op outside 0..31 is left out.
func Operations(ops ...kmsg.ACLOperation) OperationSet {
	var s OperationSet
	for _, op := range ops {
		s |= bit(op)
	}
	return s
}

func bit(op kmsg.ACLOperation) OperationSet {
	if op < 0 || op >= 32 {
		return 0
	}
	return 1 << op
}

// Contains reports whether op is in s. O(1).
func (s OperationSet) Contains(op kmsg.ACLOperation) bool { return s&bit(op) != 0 }

// List returns the operations of s in ascending code order.
func (s OperationSet) List() []kmsg.ACLOperation {
	out := make([]kmsg.ACLOperation, 0, bits.OnesCount32(uint32(s)))
	for rest := uint32(s); rest != 0; rest &= rest - 1 {
		out = append(out, kmsg.ACLOperation(bits.TrailingZeros32(rest)))
	}
	return out
}

// Bitfield returns s as the authorized_operations field of a resource of
// type rt (Kafka's Utils.to32BitField): only the operations [Supported]
// for rt are kept, as Kafka's AuthHelper.authorizedOperations asks the
// authorizer about those alone. A handler whose client did not ask for
// authorized operations answers math.MinInt32 instead (KIP-430).
func (s OperationSet) Bitfield(rt kmsg.ACLResourceType) int32 {
	return int32(s & Supported(rt))
}

// Supported returns the operations that apply to a resource of type rt
// (Kafka 4's AclEntry.supportedOperations): what [Authorizer.AuthorizedOperations]
// asks about. It is empty for ANY, UNKNOWN and unknown codes.
//
//	TOPIC             READ WRITE CREATE DELETE ALTER DESCRIBE DESCRIBE_CONFIGS ALTER_CONFIGS
//	GROUP             READ DELETE DESCRIBE DESCRIBE_CONFIGS ALTER_CONFIGS
//	CLUSTER           CREATE ALTER DESCRIBE CLUSTER_ACTION DESCRIBE_CONFIGS ALTER_CONFIGS IDEMPOTENT_WRITE
//	TRANSACTIONAL_ID  WRITE DESCRIBE
//	DELEGATION_TOKEN  DESCRIBE
//	USER              CREATE_TOKENS DESCRIBE_TOKENS
func Supported(rt kmsg.ACLResourceType) OperationSet {
	switch rt {
	case kmsg.ACLResourceTypeTopic:
		return Operations(kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate,
			kmsg.ACLOperationDelete, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe,
			kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs)
	case kmsg.ACLResourceTypeGroup:
		return Operations(kmsg.ACLOperationRead, kmsg.ACLOperationDelete, kmsg.ACLOperationDescribe,
			kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs)
	case kmsg.ACLResourceTypeCluster:
		return Operations(kmsg.ACLOperationCreate, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe,
			kmsg.ACLOperationClusterAction, kmsg.ACLOperationDescribeConfigs,
			kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite)
	case kmsg.ACLResourceTypeTransactionalId:
		return Operations(kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe)
	case kmsg.ACLResourceTypeDelegationToken:
		return Operations(kmsg.ACLOperationDescribe)
	case kmsg.ACLResourceTypeUser:
		return Operations(kmsg.ACLOperationCreateTokens, kmsg.ACLOperationDescribeTokens)
	}
	return 0
}

// covers returns the operations a binding of operation op and permission
// perm decides, as StandardAuthorizerData.findResult matches them: ALL
// covers every operation, allowed or denied; an ALLOW of READ, WRITE,
// DELETE or ALTER also allows DESCRIBE, and an ALLOW of ALTER_CONFIGS
// also allows DESCRIBE_CONFIGS; a DENY covers its own operation only, so
// denying READ leaves DESCRIBE as the other bindings decide.
func covers(op kmsg.ACLOperation, perm kmsg.ACLPermissionType) OperationSet {
	if op == kmsg.ACLOperationAll {
		return allOperations
	}
	s := bit(op)
	if perm != kmsg.ACLPermissionTypeAllow {
		return s
	}
	switch op {
	case kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
		s |= bit(kmsg.ACLOperationDescribe)
	case kmsg.ACLOperationAlterConfigs:
		s |= bit(kmsg.ACLOperationDescribeConfigs)
	}
	return s
}
