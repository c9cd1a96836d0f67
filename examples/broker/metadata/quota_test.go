package metadata

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func part(typ string, name string) QuotaPart { return QuotaPart{Type: typ, Name: &name} }

func defaultPart(typ string) QuotaPart { return QuotaPart{Type: typ} }

// TestQuotaRecords: quotas are set and removed by records, an entity left
// without one is gone, images before are unchanged, and quotas survive a
// snapshot and a log entry.
func TestQuotaRecords(t *testing.T) {
	alice := QuotaEntity{User: QuotaNamed("alice")}
	anyClient := QuotaEntity{ClientID: QuotaDefault}
	im1 := Empty().Apply(1, &Record{Quotas: []QuotaChange{
		{Entity: alice, Key: QuotaProducerByteRate, Value: 1024},
		{Entity: alice, Key: QuotaConsumerByteRate, Value: 2048},
		{Entity: anyClient, Key: QuotaRequestPercentage, Value: 12.5},
	}})
	assert.Equal(t, map[string]float64{QuotaProducerByteRate: 1024, QuotaConsumerByteRate: 2048}, im1.QuotaValues(alice))
	im2 := im1.Apply(2, &Record{Quotas: []QuotaChange{{Entity: alice, Key: QuotaProducerByteRate, Remove: true},
		{Entity: anyClient, Key: QuotaRequestPercentage, Remove: true}}})
	assert.Equal(t, map[string]float64{QuotaConsumerByteRate: 2048}, im2.QuotaValues(alice))
	assert.Nil(t, im2.QuotaValues(anyClient), "no quota left: the entity is gone")
	assert.Equal(t, float64(1024), im1.QuotaValues(alice)[QuotaProducerByteRate], "the image before is unchanged")
	im3 := im2.Apply(3, &Record{ClusterID: "x"})
	assert.Equal(t, im2.QuotaValues(alice), im3.QuotaValues(alice), "a record without quotas keeps them")

	b, err := MarshalImage(im1)
	require.NoError(t, err)
	back, err := UnmarshalImage(b)
	require.NoError(t, err)
	all, err := back.DescribeQuotas(nil, false)
	require.NoError(t, err)
	want, err := im1.DescribeQuotas(nil, false)
	require.NoError(t, err)
	assert.Equal(t, want, all, "through a snapshot")

	rec := &Record{Quotas: []QuotaChange{{Entity: QuotaEntity{User: QuotaDefault, ClientID: QuotaNamed("app")}, Key: QuotaConsumerByteRate, Value: 5}}}
	assert.False(t, rec.Empty())
	dec, err := DecodeRecord(rec.Encode())
	require.NoError(t, err)
	assert.Equal(t, rec, dec, "through a log entry, the default as a null name")
	_, err = DecodeRecord([]byte(`{"quotas":[{"entity":[{"type":"group","name":"g"}],"key":"producer_byte_rate","value":1}]}`))
	assert.ErrorIs(t, err, ErrInvalidQuota, "an entity the controller would refuse")
}

// TestClientQuotaPrecedence: the most specific quota set applies, in
// Kafka's order, and its scope names the client's own user and client id
// in place of the defaults.
func TestClientQuotaPrecedence(t *testing.T) {
	u, c, d := QuotaNamed("alice"), QuotaNamed("app"), QuotaDefault
	order := []QuotaEntity{
		{User: u, ClientID: c}, {User: u, ClientID: d}, {User: u},
		{User: d, ClientID: c}, {User: d, ClientID: d}, {User: d},
		{ClientID: c}, {ClientID: d},
	}
	scopes := []QuotaEntity{
		{User: u, ClientID: c}, {User: u, ClientID: c}, {User: u},
		{User: u, ClientID: c}, {User: u, ClientID: c}, {User: u},
		{ClientID: c}, {ClientID: c},
	}
	// Set all eight, then remove them most specific first: each
	// removal hands the client to the next in order.
	var rec Record
	for i, e := range order {
		rec.Quotas = append(rec.Quotas, QuotaChange{Entity: e, Key: QuotaProducerByteRate, Value: float64(i + 1)})
	}
	other := QuotaEntity{User: QuotaNamed("bob"), ClientID: c} // never alice's
	rec.Quotas = append(rec.Quotas, QuotaChange{Entity: other, Key: QuotaProducerByteRate, Value: 99})
	im := Empty().Apply(1, &rec)
	for i, e := range order {
		t.Run(e.String(), func(t *testing.T) {
			q, ok := im.ClientQuota(QuotaProducerByteRate, "alice", "app")
			require.True(t, ok)
			assert.Equal(t, ClientQuota{Limit: float64(i + 1), Entity: e, Scope: scopes[i]}, q)
			_, ok = im.ClientQuota(QuotaConsumerByteRate, "alice", "app")
			assert.False(t, ok, "another key is not set")
		})
		im = im.Apply(uint64(i+2), &Record{Quotas: []QuotaChange{{Entity: e, Key: QuotaProducerByteRate, Remove: true}}})
	}
	_, ok := im.ClientQuota(QuotaProducerByteRate, "alice", "app")
	assert.False(t, ok, "none left for alice")
	q, ok := im.ClientQuota(QuotaProducerByteRate, "bob", "app")
	require.True(t, ok)
	assert.Equal(t, float64(99), q.Limit)
	_, ok = Empty().ClientQuota(QuotaProducerByteRate, "alice", "app")
	assert.False(t, ok)
}

// TestAlterQuotas: every error of Kafka's controller is INVALID_REQUEST
// for its entity, which then changes nothing; the others' changes are the
// record, without those that change nothing.
func TestAlterQuotas(t *testing.T) {
	alice := []QuotaPart{part(QuotaUser, "alice")}
	set := func(key string, v float64) QuotaOp { return QuotaOp{Key: key, Value: v} }
	tests := []struct {
		name  string
		parts []QuotaPart
		ops   []QuotaOp
		err   string // "" for none
	}{
		{name: "empty entity", ops: []QuotaOp{set(QuotaProducerByteRate, 1)}, err: "Invalid empty client quota entity"},
		{name: "unknown type", parts: []QuotaPart{part("group", "g")}, err: "Unhandled client quota entity type: group"},
		{name: "a type twice", parts: []QuotaPart{part(QuotaUser, "a"), defaultPart(QuotaUser)}, err: "duplicate entity entry user"},
		{name: "empty name", parts: []QuotaPart{part(QuotaClientID, "")}, err: "Empty client-id not supported"},
		{name: "ip with a user", parts: []QuotaPart{part(QuotaIP, "10.0.0.1"), part(QuotaUser, "a")}, err: "Invalid empty client quota entity"},
		{name: "not an ip", parts: []QuotaPart{part(QuotaIP, "not-an-ip")}, err: "not a valid IP"},
		{name: "unknown key", parts: alice, ops: []QuotaOp{set("bytes_per_hour", 1)}, err: "Invalid configuration key bytes_per_hour"},
		{name: "an ip key on a user", parts: alice, ops: []QuotaOp{set(QuotaConnectionCreationRate, 1)}, err: "Invalid configuration key"},
		{name: "a user key on an ip", parts: []QuotaPart{defaultPart(QuotaIP)}, ops: []QuotaOp{set(QuotaProducerByteRate, 1)}, err: "Invalid configuration key"},
		{name: "a key twice", parts: alice, ops: []QuotaOp{set(QuotaProducerByteRate, 1), {Key: QuotaProducerByteRate, Remove: true}}, err: "Duplicate quota key"},
		{name: "a fractional long", parts: alice, ops: []QuotaOp{set(QuotaProducerByteRate, 1.5)}, err: "must be a Long value"},
		{name: "zero", parts: alice, ops: []QuotaOp{set(QuotaConsumerByteRate, 0)}, err: "must be a positive number"},
		{name: "negative", parts: alice, ops: []QuotaOp{set(QuotaRequestPercentage, -1)}, err: "must be a positive number"},
		{name: "NaN", parts: alice, ops: []QuotaOp{set(QuotaRequestPercentage, math.NaN())}, err: "must be a positive number"},
		{name: "a fractional double", parts: alice, ops: []QuotaOp{set(QuotaRequestPercentage, 12.5)}},
		{name: "an ip's rate", parts: []QuotaPart{part(QuotaIP, "::1")}, ops: []QuotaOp{set(QuotaConnectionCreationRate, 10)}},
		{name: "a default user's client", parts: []QuotaPart{defaultPart(QuotaUser), part(QuotaClientID, "app")},
			ops: []QuotaOp{set(QuotaProducerByteRate, 1024), set(QuotaControllerMutationRate, 2.5)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, entities, errs := AlterQuotas(Empty(), []QuotaAlteration{{Parts: tt.parts, Ops: tt.ops}})
			require.Len(t, errs, 1)
			if tt.err != "" {
				assert.ErrorIs(t, errs[0], ErrInvalidQuota)
				assert.ErrorContains(t, errs[0], tt.err)
				assert.Empty(t, rec.Quotas, "nothing of it applied")
				return
			}
			require.NoError(t, errs[0])
			require.Len(t, rec.Quotas, len(tt.ops))
			for i, op := range tt.ops {
				assert.Equal(t, QuotaChange{Entity: entities[0], Key: op.Key, Value: op.Value}, rec.Quotas[i])
			}
		})
	}

	t.Run("an entity twice", func(t *testing.T) {
		bob := []QuotaPart{part(QuotaUser, "bob")}
		rec, _, errs := AlterQuotas(Empty(), []QuotaAlteration{
			{Parts: alice, Ops: []QuotaOp{set(QuotaProducerByteRate, 1)}},
			{Parts: bob, Ops: []QuotaOp{set(QuotaProducerByteRate, 2)}},
			{Parts: alice, Ops: []QuotaOp{set(QuotaConsumerByteRate, 1)}},
		})
		assert.ErrorContains(t, errs[0], "Ignoring duplicate entity user=alice", "both of its entries")
		assert.NoError(t, errs[1])
		assert.ErrorContains(t, errs[2], "Ignoring duplicate entity")
		require.Len(t, rec.Quotas, 1)
		assert.Equal(t, "bob", rec.Quotas[0].Entity.User.Name)
	})

	t.Run("only what changes", func(t *testing.T) {
		e := QuotaEntity{User: QuotaNamed("alice")}
		im := Empty().Apply(1, &Record{Quotas: []QuotaChange{{Entity: e, Key: QuotaProducerByteRate, Value: 1}}})
		rec, _, errs := AlterQuotas(im, []QuotaAlteration{{Parts: alice, Ops: []QuotaOp{set(QuotaProducerByteRate, 1),
			{Key: QuotaConsumerByteRate, Remove: true}}}})
		require.NoError(t, errs[0])
		assert.Empty(t, rec.Quotas, "the same value, and a removal of a key not set")
		rec, _, _ = AlterQuotas(im, []QuotaAlteration{{Parts: alice, Ops: []QuotaOp{{Key: QuotaProducerByteRate, Remove: true}}}})
		assert.Equal(t, []QuotaChange{{Entity: e, Key: QuotaProducerByteRate, Remove: true}}, rec.Quotas)
	})
}

// TestDescribeQuotas: KIP-546's filters, as Kafka's image matches them,
// and their errors.
func TestDescribeQuotas(t *testing.T) {
	u, c, d := QuotaNamed("alice"), QuotaNamed("app"), QuotaDefault
	entities := []QuotaEntity{{User: u}, {User: u, ClientID: c}, {User: d}, {User: d, ClientID: d}, {ClientID: c}, {IP: d}}
	var rec Record
	for _, e := range entities {
		key := QuotaProducerByteRate
		if e.IP.Present {
			key = QuotaConnectionCreationRate
		}
		rec.Quotas = append(rec.Quotas, QuotaChange{Entity: e, Key: key, Value: 7})
	}
	im := Empty().Apply(1, &rec)
	alice, app := "alice", "app"
	tests := []struct {
		name    string
		filters []QuotaFilter
		strict  bool
		want    []QuotaEntity
	}{
		{name: "everything", want: []QuotaEntity{{IP: d}, {ClientID: c}, {User: d}, {User: d, ClientID: d}, {User: u}, {User: u, ClientID: c}}},
		{name: "nothing, strictly", strict: true},
		{name: "a user by name", filters: []QuotaFilter{{Type: QuotaUser, Match: &alice}},
			want: []QuotaEntity{{User: u}, {User: u, ClientID: c}}},
		{name: "a user by name, strictly", filters: []QuotaFilter{{Type: QuotaUser, Match: &alice}}, strict: true,
			want: []QuotaEntity{{User: u}}},
		{name: "the default user", filters: []QuotaFilter{{Type: QuotaUser, MatchType: QuotaMatchDefault}},
			want: []QuotaEntity{{User: d}, {User: d, ClientID: d}}},
		{name: "any user with a client id", filters: []QuotaFilter{{Type: QuotaUser, MatchType: QuotaMatchSpecified},
			{Type: QuotaClientID, MatchType: QuotaMatchSpecified}}, want: []QuotaEntity{{User: d, ClientID: d}, {User: u, ClientID: c}}},
		{name: "a client id by name", filters: []QuotaFilter{{Type: QuotaClientID, Match: &app}},
			want: []QuotaEntity{{ClientID: c}, {User: u, ClientID: c}}},
		{name: "ips", filters: []QuotaFilter{{Type: QuotaIP, MatchType: QuotaMatchSpecified}}, want: []QuotaEntity{{IP: d}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := im.DescribeQuotas(tt.filters, tt.strict)
			require.NoError(t, err)
			var es []QuotaEntity
			for _, g := range got {
				es = append(es, g.Entity)
				assert.Len(t, g.Values, 1)
			}
			assert.Equal(t, tt.want, es)
		})
	}

	bad := []struct {
		name    string
		filters []QuotaFilter
		err     error
		msg     string
	}{
		{"empty type", []QuotaFilter{{MatchType: QuotaMatchDefault}}, ErrInvalidQuota, "Invalid empty entity type"},
		{"a type twice", []QuotaFilter{{Type: QuotaUser, MatchType: QuotaMatchDefault}, {Type: QuotaUser, MatchType: QuotaMatchSpecified}},
			ErrInvalidQuota, "cannot appear more than once"},
		{"unknown type", []QuotaFilter{{Type: "group", MatchType: QuotaMatchSpecified}}, ErrUnsupportedQuotaEntity, "Unsupported entity type group"},
		{"exact without a name", []QuotaFilter{{Type: QuotaUser}}, ErrInvalidQuota, "MATCH_TYPE_EXACT"},
		{"default with a name", []QuotaFilter{{Type: QuotaUser, MatchType: QuotaMatchDefault, Match: &alice}}, ErrInvalidQuota, "also specified a match string"},
		{"unknown match type", []QuotaFilter{{Type: QuotaUser, MatchType: 3}}, ErrInvalidQuota, "Unknown match type 3"},
		{"ip with a user", []QuotaFilter{{Type: QuotaIP, MatchType: QuotaMatchSpecified}, {Type: QuotaUser, MatchType: QuotaMatchSpecified}},
			ErrInvalidQuota, "IP filter component should not be used"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := im.DescribeQuotas(tt.filters, false)
			assert.ErrorIs(t, err, tt.err)
			assert.ErrorContains(t, err, tt.msg)
		})
	}
}
