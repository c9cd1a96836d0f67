package metadata

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/internal/sasl"
)

// TestScramCredentials: credentials are set and removed by records,
// survive a snapshot, and an image never sees a later record's change.
func TestScramCredentials(t *testing.T) {
	c256, err := sasl.NewCredential(sasl.ScramSHA256, "pw", 0)
	require.NoError(t, err)
	c512, err := sasl.NewCredential(sasl.ScramSHA512, "pw", 8192)
	require.NoError(t, err)

	im0 := Empty()
	im1 := im0.Apply(1, &Record{Scram: []ScramChange{{User: "alice", Mechanism: sasl.ScramSHA256, Credential: &c256},
		{User: "alice", Mechanism: sasl.ScramSHA512, Credential: &c512}, {User: "bob", Mechanism: sasl.ScramSHA256, Credential: &c256}}})
	got, ok := im1.Credential("alice", sasl.ScramSHA512)
	require.True(t, ok)
	assert.Equal(t, c512, got)
	_, ok = im0.Credential("alice", sasl.ScramSHA512)
	assert.False(t, ok, "the image before is unchanged")

	im2 := im1.Apply(2, &Record{Partitions: []PartitionChange{{Index: 0}}})
	assert.Equal(t, im1.ScramUsers(), im2.ScramUsers(), "a record without credentials keeps them")

	im3 := im2.Apply(3, &Record{Scram: []ScramChange{{User: "alice", Mechanism: sasl.ScramSHA256}}})
	_, ok = im3.Credential("alice", sasl.ScramSHA256)
	assert.False(t, ok, "removed")
	_, ok = im2.Credential("alice", sasl.ScramSHA256)
	assert.True(t, ok, "still in the image before")
	users := im3.ScramUsers()
	require.Len(t, users, 2)
	assert.Equal(t, "alice", users[0].User)
	assert.Equal(t, []sasl.Credential{c512}, users[0].Credentials)
	assert.Equal(t, "bob", users[1].User)

	b, err := MarshalImage(im3)
	require.NoError(t, err)
	back, err := UnmarshalImage(b)
	require.NoError(t, err)
	assert.Equal(t, users, back.ScramUsers(), "through a snapshot")

	rec, err := DecodeRecord((&Record{Scram: []ScramChange{{User: "carol", Mechanism: sasl.ScramSHA512, Credential: &c512}}}).Encode())
	require.NoError(t, err)
	assert.False(t, rec.Empty())
	got, ok = back.Apply(4, rec).Credential("carol", sasl.ScramSHA512)
	require.True(t, ok)
	assert.Equal(t, c512, got, "through a log entry")
}

// TestEndpoints: a broker's endpoints are set as a whole, survive a
// snapshot, and are shared by the images that do not change them.
func TestEndpoints(t *testing.T) {
	eps := []Endpoint{{Listener: "INTERNAL", Host: "h1", Port: 9092, Protocol: "PLAINTEXT"},
		{Listener: "EXTERNAL", Host: "example.com", Port: 19092, Protocol: "SASL_SSL"}}
	im := Empty().Apply(1, &Record{Endpoints: []BrokerEndpoints{{Broker: 1, Endpoints: eps}}})
	e, ok := im.Endpoint(1, "EXTERNAL")
	require.True(t, ok)
	assert.Equal(t, eps[1], e)
	_, ok = im.Endpoint(2, "EXTERNAL")
	assert.False(t, ok)
	im2 := im.Apply(2, &Record{Endpoints: []BrokerEndpoints{{Broker: 1, Endpoints: eps[:1]}}})
	_, ok = im2.Endpoint(1, "EXTERNAL")
	assert.False(t, ok, "replaced as a whole")
	assert.Equal(t, eps, im.Endpoints(1), "the image before is unchanged")
	b, err := MarshalImage(im)
	require.NoError(t, err)
	back, err := UnmarshalImage(b)
	require.NoError(t, err)
	assert.Equal(t, eps, back.Endpoints(1))
}
