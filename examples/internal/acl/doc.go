// Package acl is the examples' authorizer: a set of ACL bindings and the
// checks each request makes against them, with the semantics of Apache
// Kafka's StandardAuthorizer (KRaft's authorizer, StandardAuthorizerData)
// and of the CreateAcls, DescribeAcls and DeleteAcls APIs
// (AclControlManager). It is pure logic: the handlers pass wire values
// (the kmsg ACL enums) straight in. The broker's bindings reach every
// broker through the metadata log, as [Binding.AppendBinary] records; the
// proxy's are the upstream cluster's, read with DescribeAcls.
//
// # Bindings
//
// A [Binding] (Kafka's AclBinding) allows or denies a principal
// ("User:alice"), connecting from a host (an IP address, or "*"), one
// operation (or ALL) on a resource pattern: a resource type (TOPIC,
// GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER) and a name,
// LITERAL or PREFIXED (KIP-290). A LITERAL binding named "*"
// ([Wildcard]) applies to every resource of its type; a PREFIXED one
// applies to every name it begins. The principal "User:*"
// ([WildcardPrincipal]) stands for every principal. The set holds each
// binding once; [Binding.Validate] says which bindings CreateAcls accepts.
//
// # Checks
//
// [Authorizer.Authorize] answers one request, as
// StandardAuthorizerData.authorize does:
//
//	super user?                                   -> allowed
//	bindings that apply to the resource:
//	  LITERAL name, LITERAL "*", PREFIXED p with name starting with p
//	of those, the ones that match the request:
//	  principal (or User:*), host (or *), operation covered (below)
//	a matching DENY                               -> denied (DENY wins)
//	a matching ALLOW                              -> allowed
//	bindings apply to the resource, none matches  -> denied
//	no binding applies to the resource at all     -> allow.everyone.if.no.acl.found
//
// A binding covers its own operation, and an operation implies others
// only when allowed (StandardAuthorizerData.findResult):
//
//	ALLOW or DENY of ALL                       covers every operation
//	ALLOW of READ, WRITE, DELETE or ALTER      covers DESCRIBE too
//	ALLOW of ALTER_CONFIGS                     covers DESCRIBE_CONFIGS too
//	DENY of anything but ALL                   covers that operation alone
//
// so a DENY of DESCRIBE leaves READ allowed by an ALLOW of READ (and a
// DENY of READ leaves DESCRIBE allowed by it). [Authorizer.AuthorizedOperations]
// asks the same of every operation [Supported] for a resource type at
// once (KIP-430), and [Authorizer.AuthorizeAny] asks whether some resource
// of a type is open (Kafka's authorizeByResourceType).
//
// # Filters
//
// A [Filter] (Kafka's AclBindingFilter) selects bindings for
// [Authorizer.Describe] and [Authorizer.Remove]: ANY and nil fields match
// everything; pattern type MATCH selects every binding that applies to a
// name. Results come in one deterministic order (resource type, name,
// pattern type, principal, host, operation, permission), whatever the
// history of the set.
//
// # Errors
//
// Validation errors are [ErrInvalidBinding] or [ErrInvalidFilter] and wrap
// the Kafka error the response carries (INVALID_REQUEST); [Code] returns
// its code, and the error's text is the response's message.
//
// # Concurrency
//
// Every check reads the current snapshot of the bindings through an
// atomic pointer, with no lock, and allocates nothing for a valid host: a
// check sees the bindings before a write or after it, never half of one.
// Writers ([Authorizer.Add], [Authorizer.Remove], [Authorizer.Replace])
// are serialized by one mutex, the only lock; each builds the next
// snapshot beside the current one and publishes it whole.
//
// A snapshot holds a radix tree of names per resource type; each node
// holds the LITERAL and PREFIXED rules of its name, sorted by principal.
// A check walks the path of the resource's name once (the PREFIXED rules
// of the nodes on it apply, and the LITERAL rules of its end), looks up
// the "*" node, and in each node that holds rules searches those of the
// principal (those of User:* are set apart when the node is built):
// O(len(name) + log(rules per node)), whatever the number of bindings. The tree is persistent: a write copies the
// nodes on the paths it changes and shares the rest, O(name length ×
// fanout) per binding, so that replaying a log binding by binding is
// cheap and an old snapshot stays whole for the readers still using it.
//
//	TOPIC tree for: LITERAL "*", PREFIXED "pay", LITERAL "payments",
//	                PREFIXED "payroll-", LITERAL "orders"
//
//	"" ─┬─ "*"        literal
//	    ├─ "orders"   literal
//	    └─ "pay"      prefixed
//	         ├─ "payments"  literal
//	         └─ "payroll-"  prefixed
//
//	Authorize(TOPIC "payroll-eu"): "*", "pay" (prefixed), "payroll-" (prefixed)
package acl
