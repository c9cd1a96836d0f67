package metadata

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"slices"
	"strings"
)

// Client quotas (KIP-55, KIP-546; Kafka's QuotaRecord, ClientQuotaImage
// and ClientQuotaControlManager): rates set on an entity (a user, a
// client id, a user's client id, or an IP address, each by name or the
// default), which the brokers enforce per client (package quota) and
// DescribeClientQuotas lists.

// The quota entity types (Kafka's ClientQuotaEntity).
const (
	QuotaUser     = "user"
	QuotaClientID = "client-id"
	QuotaIP       = "ip"
)

// The quota keys (Kafka's QuotaConfigs).
const (
	QuotaProducerByteRate       = "producer_byte_rate"       // bytes/s of Produce requests
	QuotaConsumerByteRate       = "consumer_byte_rate"       // bytes/s of Fetch responses
	QuotaRequestPercentage      = "request_percentage"       // % of one request handler thread
	QuotaControllerMutationRate = "controller_mutation_rate" // partitions created or deleted per second
	QuotaConnectionCreationRate = "connection_creation_rate" // connections accepted per second, per IP
)

// quotaKeyType is what values a key takes: integral or any number.
type quotaKeyType int

const (
	quotaLong quotaKeyType = iota
	quotaDouble
)

// userClientKeys are the keys of user and client-id entities, ipKeys an
// IP's (Kafka's QuotaConfigs.userClientConfigs and ipConfigs).
var (
	userClientKeys = map[string]quotaKeyType{QuotaProducerByteRate: quotaLong, QuotaConsumerByteRate: quotaLong,
		QuotaRequestPercentage: quotaDouble, QuotaControllerMutationRate: quotaDouble}
	ipKeys = map[string]quotaKeyType{QuotaConnectionCreationRate: quotaLong}
)

// ErrInvalidQuota is wrapped by the errors of an invalid quota entity,
// filter, key or value (Kafka's INVALID_REQUEST).
var ErrInvalidQuota = errors.New("metadata: invalid client quota")

// ErrUnsupportedQuotaEntity is wrapped by the error of a filter naming an
// entity type other than user, client-id and ip (Kafka's
// UNSUPPORTED_VERSION).
var ErrUnsupportedQuotaEntity = errors.New("metadata: unsupported client quota entity type")

// QuotaName is one part of a QuotaEntity: absent (the zero value), a
// name, or the default (a null name in the protocol, <default> in Kafka's
// paths), which applies to each name that has no quota of its own.
type QuotaName struct {
	Present bool
	Default bool   // Name is empty
	Name    string // Present and not Default
}

// QuotaNamed returns the part named name.
func QuotaNamed(name string) QuotaName { return QuotaName{Present: true, Name: name} }

// QuotaDefault is the default part.
var QuotaDefault = QuotaName{Present: true, Default: true}

// ptr returns the part's name as the protocol carries it: nil for the
// default.
func (n QuotaName) ptr() *string {
	if n.Default {
		return nil
	}
	return &n.Name
}

func (n QuotaName) String() string {
	if n.Default {
		return "<default>"
	}
	return n.Name
}

// QuotaEntity is what a quota is set on (Kafka's ClientQuotaEntity): a
// user, a client id, both, or an IP address. Comparable: the image keys
// its quotas by it.
type QuotaEntity struct {
	User, ClientID, IP QuotaName
}

// QuotaPart is one part of an entity as the protocol carries it: its
// type and its name, nil for the default.
type QuotaPart struct {
	Type string  `json:"type"`
	Name *string `json:"name"`
}

// Parts returns e's parts, user, client-id, ip.
func (e QuotaEntity) Parts() []QuotaPart {
	var out []QuotaPart
	for _, p := range []struct {
		typ  string
		name QuotaName
	}{{QuotaUser, e.User}, {QuotaClientID, e.ClientID}, {QuotaIP, e.IP}} {
		if p.name.Present {
			out = append(out, QuotaPart{Type: p.typ, Name: p.name.ptr()})
		}
	}
	return out
}

// String returns e as Kafka prints a quota entity's path: user=alice,
// client-id=<default>.
func (e QuotaEntity) String() string {
	parts := e.Parts()
	s := make([]string, len(parts))
	for i, p := range parts {
		name := "<default>"
		if p.Name != nil {
			name = *p.Name
		}
		s[i] = p.Type + "=" + name
	}
	return strings.Join(s, ", ")
}

// MarshalJSON encodes e as its parts.
func (e QuotaEntity) MarshalJSON() ([]byte, error) { return json.Marshal(e.Parts()) }

// UnmarshalJSON decodes what MarshalJSON wrote, refusing an entity that
// ParseQuotaEntity refuses.
func (e *QuotaEntity) UnmarshalJSON(data []byte) error {
	var parts []QuotaPart
	if err := json.Unmarshal(data, &parts); err != nil {
		return err
	}
	var err error
	*e, err = ParseQuotaEntity(parts)
	return err
}

// ParseQuotaEntity returns the entity parts name, as AlterClientQuotas
// carries it, checked as Kafka's controller checks it: known types, each
// once, no empty name, an IP address alone (as an address: Kafka also
// resolves host names), at least one part. Its error wraps
// ErrInvalidQuota, with Kafka's message.
func ParseQuotaEntity(parts []QuotaPart) (QuotaEntity, error) {
	var e QuotaEntity
	if len(parts) == 0 {
		return e, fmt.Errorf("%w: Invalid empty client quota entity", ErrInvalidQuota)
	}
	for _, p := range parts {
		var dst *QuotaName
		switch p.Type {
		case QuotaUser:
			dst = &e.User
		case QuotaClientID:
			dst = &e.ClientID
		case QuotaIP:
			dst = &e.IP
		default:
			return QuotaEntity{}, fmt.Errorf("%w: Unhandled client quota entity type: %s", ErrInvalidQuota, p.Type)
		}
		if dst.Present {
			return QuotaEntity{}, fmt.Errorf("%w: Invalid empty client quota entity, duplicate entity entry %s", ErrInvalidQuota, p.Type)
		}
		switch {
		case p.Name == nil:
			*dst = QuotaDefault
		case *p.Name == "":
			return QuotaEntity{}, fmt.Errorf("%w: Empty %s not supported", ErrInvalidQuota, p.Type)
		default:
			*dst = QuotaNamed(*p.Name)
		}
	}
	if e.IP.Present {
		if e.User.Present || e.ClientID.Present {
			return QuotaEntity{}, fmt.Errorf("%w: Invalid empty client quota entity", ErrInvalidQuota)
		}
		if !e.IP.Default {
			if _, err := netip.ParseAddr(e.IP.Name); err != nil {
				return QuotaEntity{}, fmt.Errorf("%w: %s is not a valid IP or resolvable host.", ErrInvalidQuota, e.IP.Name)
			}
		}
	}
	return e, nil
}

// keys returns the quota keys e takes, by type.
func (e QuotaEntity) keys() map[string]quotaKeyType {
	if e.IP.Present {
		return ipKeys
	}
	return userClientKeys
}

// QuotaChange sets or removes one quota of an entity (Kafka's
// QuotaRecord).
type QuotaChange struct {
	Entity QuotaEntity `json:"entity"`
	Key    string      `json:"key"`
	Value  float64     `json:"value,omitempty"`
	Remove bool        `json:"remove,omitempty"`
}

// QuotaOp is one operation of an AlterClientQuotas entry: set Key to
// Value, or remove it.
type QuotaOp struct {
	Key    string
	Value  float64
	Remove bool
}

// QuotaAlteration is one entry of AlterClientQuotas: an entity, as the
// request names it, and its operations.
type QuotaAlteration struct {
	Parts []QuotaPart
	Ops   []QuotaOp
}

// AlterQuotas decides alts against im (Kafka's
// ClientQuotaControlManager.alterClientQuotas): each entity's operations
// are checked (its entity by ParseQuotaEntity, each key once and known
// for the entity, a long key's value integral, every value a positive
// finite number, where Kafka would store a rate of zero that mutes its
// client for ever), and an entity with an error has none of them applied;
// an entity named twice in alts is an error for both. The record holds a
// change for each value that differs from the image's and each removal of
// a value it holds. It returns each entry's entity (the zero entity for
// one that does not parse) and error, in the order given.
func AlterQuotas(im *Image, alts []QuotaAlteration) (Record, []QuotaEntity, []error) {
	entities := make([]QuotaEntity, len(alts))
	errs := make([]error, len(alts))
	first := make(map[QuotaEntity]int) // each entity's first entry
	for i, a := range alts {
		entities[i], errs[i] = ParseQuotaEntity(a.Parts)
		if errs[i] != nil {
			continue
		}
		if j, twice := first[entities[i]]; twice {
			errs[i] = fmt.Errorf("%w: Ignoring duplicate entity %s", ErrInvalidQuota, entities[i])
			if errs[j] == nil {
				errs[j] = errs[i]
			}
			continue
		}
		first[entities[i]] = i
		errs[i] = checkQuotaOps(entities[i], a.Ops)
	}
	var rec Record
	for i, a := range alts {
		if errs[i] != nil {
			continue
		}
		e := entities[i]
		held := im.quotas[e]
		for _, op := range a.Ops {
			v, ok := held[op.Key]
			switch {
			case op.Remove && ok:
				rec.Quotas = append(rec.Quotas, QuotaChange{Entity: e, Key: op.Key, Remove: true})
			case !op.Remove && (!ok || v != op.Value):
				rec.Quotas = append(rec.Quotas, QuotaChange{Entity: e, Key: op.Key, Value: op.Value})
			}
		}
	}
	return rec, entities, errs
}

// checkQuotaOps checks one entity's operations.
func checkQuotaOps(e QuotaEntity, ops []QuotaOp) error {
	keys := e.keys()
	seen := make(map[string]bool, len(ops))
	for _, op := range ops {
		if seen[op.Key] {
			return fmt.Errorf("%w: Duplicate quota key %s not updating quota for this entity %s", ErrInvalidQuota, op.Key, e)
		}
		seen[op.Key] = true
		typ, ok := keys[op.Key]
		switch {
		case !ok:
			return fmt.Errorf("%w: Invalid configuration key %s", ErrInvalidQuota, op.Key)
		case op.Remove:
		case math.IsNaN(op.Value) || math.IsInf(op.Value, 0) || op.Value <= 0:
			return fmt.Errorf("%w: Configuration %s must be a positive number, not %v", ErrInvalidQuota, op.Key, op.Value)
		case typ == quotaLong && math.Abs(math.Round(op.Value)-op.Value) > 1e-6:
			return fmt.Errorf("%w: Configuration %s must be a Long value", ErrInvalidQuota, op.Key)
		}
	}
	return nil
}

// QuotaValues returns e's quotas, by key; nil if it has none. The map must
// not be written. O(1).
func (im *Image) QuotaValues(e QuotaEntity) map[string]float64 { return im.quotas[e] }

// QuotaEntry is an entity and its quotas.
type QuotaEntry struct {
	Entity QuotaEntity
	Values map[string]float64 // must not be written
}

// The match types of a DescribeClientQuotas filter component.
const (
	QuotaMatchExact     int8 = 0 // the name given
	QuotaMatchDefault   int8 = 1 // the default
	QuotaMatchSpecified int8 = 2 // any name, the default among them
)

// QuotaFilter is one component of a DescribeClientQuotas filter: an
// entity type, and which of its names match.
type QuotaFilter struct {
	Type      string
	MatchType int8
	Match     *string
}

// DescribeQuotas returns the entities filters select, with their quotas,
// in entity order (Kafka's ClientQuotasImage.describe): an entity matches
// when it has a part of each filter's type whose name the filter
// matches; with strict, only those with no other part. No filters select
// every entity, or none when strict. An invalid filter (an empty or
// repeated type, a match given for DEFAULT or SPECIFIED or missing for
// EXACT, an unknown match type, an ip filter beside a user or client-id
// one) is an error wrapping ErrInvalidQuota; an unknown type one wrapping
// ErrUnsupportedQuotaEntity. O(entities).
func (im *Image) DescribeQuotas(filters []QuotaFilter, strict bool) ([]QuotaEntry, error) {
	byType := make(map[string]QuotaFilter, len(filters))
	for _, f := range filters {
		switch {
		case f.Type == "":
			return nil, fmt.Errorf("%w: Invalid empty entity type.", ErrInvalidQuota)
		case byType[f.Type].Type != "":
			return nil, fmt.Errorf("%w: Entity type %s cannot appear more than once in the filter.", ErrInvalidQuota, f.Type)
		case f.Type != QuotaUser && f.Type != QuotaClientID && f.Type != QuotaIP:
			return nil, fmt.Errorf("%w: Unsupported entity type %s", ErrUnsupportedQuotaEntity, f.Type)
		}
		switch f.MatchType {
		case QuotaMatchExact:
			if f.Match == nil {
				return nil, fmt.Errorf("%w: Request specified MATCH_TYPE_EXACT, but set match string to null.", ErrInvalidQuota)
			}
		case QuotaMatchDefault, QuotaMatchSpecified:
			if f.Match != nil {
				return nil, fmt.Errorf("%w: Request specified MATCH_TYPE_DEFAULT or MATCH_TYPE_SPECIFIED, but also specified a match string.", ErrInvalidQuota)
			}
		default:
			return nil, fmt.Errorf("%w: Unknown match type %d", ErrInvalidQuota, f.MatchType)
		}
		byType[f.Type] = f
	}
	if byType[QuotaIP].Type != "" && (byType[QuotaUser].Type != "" || byType[QuotaClientID].Type != "") {
		return nil, fmt.Errorf("%w: Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.", ErrInvalidQuota)
	}
	if len(filters) == 0 && strict {
		return nil, nil
	}
	var out []QuotaEntry
	for e, values := range im.quotas {
		if quotaMatches(e, byType, strict) {
			out = append(out, QuotaEntry{Entity: e, Values: values})
		}
	}
	slices.SortFunc(out, func(a, b QuotaEntry) int { return compareQuotaEntities(a.Entity, b.Entity) })
	return out, nil
}

// quotaMatches reports whether the filters (by type) select e.
func quotaMatches(e QuotaEntity, byType map[string]QuotaFilter, strict bool) bool {
	for _, p := range []struct {
		typ  string
		name QuotaName
	}{{QuotaUser, e.User}, {QuotaClientID, e.ClientID}, {QuotaIP, e.IP}} {
		f, filtered := byType[p.typ]
		switch {
		case !filtered:
			if strict && p.name.Present {
				return false
			}
		case !p.name.Present:
			return false
		case f.MatchType == QuotaMatchExact && (p.name.Default || p.name.Name != *f.Match):
			return false
		case f.MatchType == QuotaMatchDefault && !p.name.Default:
			return false
		}
	}
	return true
}

// compareQuotaEntities orders entities by user, client id, ip; an absent
// part first, the default next.
func compareQuotaEntities(a, b QuotaEntity) int {
	name := func(x, y QuotaName) int {
		return cmp.Or(cmp.Compare(b2i(x.Present), b2i(y.Present)), cmp.Compare(b2i(!x.Default), b2i(!y.Default)),
			strings.Compare(x.Name, y.Name))
	}
	return cmp.Or(name(a.User, b.User), name(a.ClientID, b.ClientID), name(a.IP, b.IP))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ClientQuota is the quota of one key that applies to a client
// (Image.ClientQuota).
type ClientQuota struct {
	// Limit is the quota's value.
	Limit float64
	// Entity is where it is set: a default entity for a client
	// without a quota of its own.
	Entity QuotaEntity
	// Scope is whose usage the quota bounds (Kafka's quota metric
	// tags): Entity with the client's own names in place of its
	// defaults, so that a default quota bounds each user or client id
	// on its own, and a user's quota all of the user's client ids
	// together.
	Scope QuotaEntity
}

// ClientQuota returns the quota of key that applies to the client with
// user and clientID, the most specific one set, in Kafka's order:
//
//	/users/<user>/clients/<client-id>
//	/users/<user>/clients/<default>
//	/users/<user>
//	/users/<default>/clients/<client-id>
//	/users/<default>/clients/<default>
//	/users/<default>
//	/clients/<client-id>
//	/clients/<default>
//
// ok is false when none is set. O(1): at most eight lookups, none when the
// image holds no quota.
func (im *Image) ClientQuota(key, user, clientID string) (q ClientQuota, ok bool) {
	if len(im.quotas) == 0 {
		return ClientQuota{}, false
	}
	u, c := QuotaNamed(user), QuotaNamed(clientID)
	for _, e := range [...]QuotaEntity{
		{User: u, ClientID: c}, {User: u, ClientID: QuotaDefault}, {User: u},
		{User: QuotaDefault, ClientID: c}, {User: QuotaDefault, ClientID: QuotaDefault}, {User: QuotaDefault},
		{ClientID: c}, {ClientID: QuotaDefault},
	} {
		v, ok := im.quotas[e][key]
		if !ok {
			continue
		}
		scope := QuotaEntity{}
		if e.User.Present {
			scope.User = u
		}
		if e.ClientID.Present {
			scope.ClientID = c
		}
		return ClientQuota{Limit: v, Entity: e, Scope: scope}, true
	}
	return ClientQuota{}, false
}

// applyQuotas applies changes to the image's quotas, copying what they
// change: images share their quotas until one changes them. An entity
// left without a quota is dropped.
func (im *Image) applyQuotas(changes []QuotaChange) {
	if len(changes) == 0 {
		return
	}
	im.quotas = maps.Clone(im.quotas)
	if im.quotas == nil {
		im.quotas = make(map[QuotaEntity]map[string]float64)
	}
	copied := make(map[QuotaEntity]bool)
	for _, c := range changes {
		values := im.quotas[c.Entity]
		if !copied[c.Entity] {
			values = maps.Clone(values)
			if values == nil {
				values = make(map[string]float64)
			}
			copied[c.Entity] = true
		}
		if c.Remove {
			delete(values, c.Key)
		} else {
			values[c.Key] = c.Value
		}
		if len(values) == 0 {
			delete(im.quotas, c.Entity)
			delete(copied, c.Entity) // a later change starts afresh
			continue
		}
		im.quotas[c.Entity] = values
	}
}

// QuotaChanges returns the image's quotas as the changes that set them,
// in entity and key order: what a snapshot holds, and a broker alone
// keeps in log.dirs.
func (im *Image) QuotaChanges() []QuotaChange {
	entities := slices.SortedFunc(maps.Keys(im.quotas), compareQuotaEntities)
	var out []QuotaChange
	for _, e := range entities {
		for _, k := range slices.Sorted(maps.Keys(im.quotas[e])) {
			out = append(out, QuotaChange{Entity: e, Key: k, Value: im.quotas[e][k]})
		}
	}
	return out
}
