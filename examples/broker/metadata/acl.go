package metadata

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/gopurgatory/purgatory/examples/internal/acl"
)

// ACLChange adds or removes one ACL binding (Kafka's
// AccessControlEntryRecord and RemoveAccessControlEntryRecord). A log
// entry holds the binding as its acl.Binding.AppendBinary bytes, which
// only a valid binding has: the controller commits no other.
type ACLChange struct {
	Binding acl.Binding
	// Remove removes Binding; false adds it.
	Remove bool
}

// aclChangeJSON is an ACLChange in a log entry or a snapshot: the
// binding's bytes, in base64.
type aclChangeJSON struct {
	Binding []byte `json:"binding"`
	Remove  bool   `json:"remove,omitempty"`
}

// MarshalJSON encodes c with its binding's AppendBinary bytes; an
// invalid binding is an error.
func (c ACLChange) MarshalJSON() ([]byte, error) {
	b, err := c.Binding.AppendBinary(nil)
	if err != nil {
		return nil, err
	}
	return json.Marshal(aclChangeJSON{Binding: b, Remove: c.Remove})
}

// UnmarshalJSON decodes what MarshalJSON wrote, refusing bytes that are
// not a valid binding (acl.DecodeBinding).
func (c *ACLChange) UnmarshalJSON(data []byte) error {
	var j aclChangeJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	b, err := acl.DecodeBinding(j.Binding)
	if err != nil {
		return fmt.Errorf("metadata: an ACL change: %w", err)
	}
	c.Binding, c.Remove = b, j.Remove
	return nil
}

// HasACL reports whether the image holds b. O(1).
func (im *Image) HasACL(b acl.Binding) bool {
	_, ok := im.acls[b]
	return ok
}

// ACLCount returns how many bindings the image holds. O(1).
func (im *Image) ACLCount() int { return len(im.acls) }

// ACLs returns every binding, in the order of acl.Authorizer.Describe
// (resource type, name, pattern type, principal, host, operation,
// permission): what a broker's authorizer is loaded with. O(n log n).
func (im *Image) ACLs() []acl.Binding {
	return slices.SortedFunc(maps.Keys(im.acls), acl.CompareBindings)
}

// MatchingACLs returns the bindings f selects (acl.Filter.Matches), in
// the order of ACLs: what the controller removes for a DeleteAcls filter,
// so that every broker removes the same bindings. It does not validate f.
// O(n), as Kafka's AclControlManager scans its bindings.
func (im *Image) MatchingACLs(f acl.Filter) []acl.Binding {
	var out []acl.Binding
	for b := range im.acls {
		if f.Matches(b) {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, acl.CompareBindings)
	return out
}

// applyACLs applies changes to the image's bindings, copying them first:
// images share their bindings until one changes them, so that the records
// that change none (most) copy nothing. Adding a binding held, or
// removing one not held, changes nothing. O(bindings) for a record with
// changes: a broker's authorizer follows the records one by one instead.
func (im *Image) applyACLs(changes []ACLChange) {
	if len(changes) == 0 {
		return
	}
	im.acls = maps.Clone(im.acls)
	if im.acls == nil {
		im.acls = make(map[acl.Binding]struct{})
	}
	for _, c := range changes {
		if c.Remove {
			delete(im.acls, c.Binding)
		} else {
			im.acls[c.Binding] = struct{}{}
		}
	}
}

// aclEntries returns the bindings as a snapshot holds them: additions.
func (im *Image) aclEntries() []ACLChange {
	out := make([]ACLChange, 0, len(im.acls))
	for _, b := range im.ACLs() {
		out = append(out, ACLChange{Binding: b})
	}
	return out
}
