package acl

import "fmt"

// Option configures an [Authorizer].
type Option interface{ apply(*config) }

type config struct {
	superUsers   []string
	allowIfNoACL bool
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithSuperUsers adds principals ("User:admin") that every check allows,
// whatever the bindings say, DENY included: Kafka's super.users (which
// lists them separated by semicolons). A principal matches a super user
// by exact string.
func WithSuperUsers(principals ...string) Option {
	return optionFunc(func(c *config) { c.superUsers = append(c.superUsers, principals...) })
}

// WithAllowEveryoneIfNoACLFound sets what a check answers when no binding
// at all applies to the resource (whoever the binding is for): Kafka's
// allow.everyone.if.no.acl.found, false by default, so that a resource
// without bindings is closed to all but the super users.
func WithAllowEveryoneIfNoACLFound(allow bool) Option {
	return optionFunc(func(c *config) { c.allowIfNoACL = allow })
}

func (c *config) validate() error {
	for _, p := range c.superUsers {
		if !validPrincipal(p) {
			return fmt.Errorf("%w: super user %q is not of the form principalType:principalName", ErrInvalidOption, p)
		}
	}
	return nil
}
