package authz

import (
	"fmt"
	"strings"

	"github.com/gopurgatory/purgatory/examples/internal/acl"
)

// The authorizer.class.name values that turn package acl's authorizer on.
const (
	// StandardAuthorizer is Kafka's name of its KRaft authorizer.
	StandardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	// ShortName is the examples' short name for it.
	ShortName = "acl"
	// ZooKeeperAuthorizer is ZooKeeper's authorizer, removed in Kafka 4:
	// refused with a word on what to use instead.
	ZooKeeperAuthorizer = "kafka.security.authorizer.AclAuthorizer"
)

// Options reads Kafka's authorizer configs, authorizer.class.name,
// super.users (principals separated by ';') and
// allow.everyone.if.no.acl.found, and returns the options of the
// authorizer they ask for, and whether they ask for one: an empty class
// name asks for none. An unknown class name, or a super user that is no
// principal, is an error naming its config.
func Options(className, superUsers string, allowIfNoACL bool) ([]acl.Option, bool, error) {
	switch className {
	case "":
		return nil, false, nil
	case StandardAuthorizer, ShortName:
	case ZooKeeperAuthorizer:
		return nil, false, fmt.Errorf("authorizer.class.name: %s is ZooKeeper's, removed in Kafka 4: use %s", ZooKeeperAuthorizer, StandardAuthorizer)
	default:
		return nil, false, fmt.Errorf("authorizer.class.name: %q: use %s (or %q), or nothing for no authorization", className, StandardAuthorizer, ShortName)
	}
	opts := []acl.Option{acl.WithSuperUsers(SuperUsers(superUsers)...), acl.WithAllowEveryoneIfNoACLFound(allowIfNoACL)}
	if _, err := acl.New(opts...); err != nil {
		return nil, false, fmt.Errorf("super.users: %w", err)
	}
	return opts, true, nil
}

// SuperUsers reads super.users: principals separated by ';'.
func SuperUsers(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ";") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
