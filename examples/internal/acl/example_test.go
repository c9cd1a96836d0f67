package acl_test

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/acl"
)

// An authorizer with a super user and a few bindings answers checks, the
// authorized operations of KIP-430, and DescribeAcls' MATCH filter; a
// binding travels through the metadata log as bytes.
func Example() {
	a, err := acl.New(acl.WithSuperUsers("User:admin"))
	if err != nil {
		panic(err)
	}
	topic := kmsg.ACLResourceTypeTopic
	_, err = a.Add(
		acl.Binding{ResourceType: topic, ResourceName: "payments-", PatternType: kmsg.ACLResourcePatternTypePrefixed,
			Principal: "User:alice", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow},
		acl.Binding{ResourceType: topic, ResourceName: "payments-audit", PatternType: kmsg.ACLResourcePatternTypeLiteral,
			Principal: "User:*", Host: "*", Operation: kmsg.ACLOperationAll, Permission: kmsg.ACLPermissionTypeDeny},
	)
	if err != nil {
		panic(err)
	}

	read := kmsg.ACLOperationRead
	fmt.Println("alice reads payments-eu:", a.Authorize("User:alice", "10.0.0.7", read, topic, "payments-eu"))
	fmt.Println("alice reads payments-audit:", a.Authorize("User:alice", "10.0.0.7", read, topic, "payments-audit"))
	fmt.Println("bob reads payments-eu:", a.Authorize("User:bob", "10.0.0.7", read, topic, "payments-eu"))
	fmt.Println("admin reads payments-audit:", a.Authorize("User:admin", "10.0.0.7", read, topic, "payments-audit"))

	ops := a.AuthorizedOperations("User:alice", "10.0.0.7", topic, "payments-eu")
	fmt.Println("alice may, on payments-eu:", ops.List(), ops.Bitfield(topic))

	name := "payments-audit"
	match := acl.Any()
	match.ResourceType, match.PatternType, match.ResourceName = topic, kmsg.ACLResourcePatternTypeMatch, &name
	applying, _ := a.Describe(match)
	for _, b := range applying {
		fmt.Println("applies:", b.PatternType, b.ResourceName, b.Principal, b.Permission, b.Operation)
	}

	_, err = a.Add(acl.Binding{ResourceType: topic, ResourceName: "", PatternType: kmsg.ACLResourcePatternTypeLiteral,
		Principal: "User:alice", Host: "*", Operation: read, Permission: kmsg.ACLPermissionTypeAllow})
	fmt.Println("error code", acl.Code(err), err)

	record, _ := applying[0].AppendBinary(nil)
	b, err := acl.DecodeBinding(record)
	fmt.Println(len(record), "bytes, decoded equal:", err == nil && b == applying[0])
	// Output:
	// alice reads payments-eu: true
	// alice reads payments-audit: false
	// bob reads payments-eu: false
	// admin reads payments-audit: true
	// alice may, on payments-eu: [READ DESCRIBE] 264
	// applies: PREFIXED payments- User:alice ALLOW READ
	// applies: LITERAL payments-audit User:* DENY ALL
	// error code 42 acl: invalid binding: resource name should not be empty
	// 28 bytes, decoded equal: true
}
