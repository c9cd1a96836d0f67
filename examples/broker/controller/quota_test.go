package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
)

// TestAlterQuotas: one request's valid entities are committed in one
// record, its invalid ones are refused alone, validate_only commits
// nothing, and a controller that is not active decides nothing.
func TestAlterQuotas(t *testing.T) {
	c, log, _ := newActive(t)
	ctx := context.Background()
	alice, bob := "alice", "bob"
	alts := []metadata.QuotaAlteration{
		{Parts: []metadata.QuotaPart{{Type: metadata.QuotaUser, Name: &alice}},
			Ops: []metadata.QuotaOp{{Key: metadata.QuotaProducerByteRate, Value: 1024}}},
		{Parts: []metadata.QuotaPart{{Type: metadata.QuotaUser, Name: &bob}},
			Ops: []metadata.QuotaOp{{Key: metadata.QuotaProducerByteRate, Value: 1.5}}},
		{Parts: []metadata.QuotaPart{{Type: metadata.QuotaClientID}},
			Ops: []metadata.QuotaOp{{Key: metadata.QuotaConsumerByteRate, Value: 4096}}},
	}
	index := log.Image().Index
	entities, errs, err := c.AlterQuotas(ctx, alts, true)
	require.NoError(t, err)
	require.Len(t, errs, 3)
	assert.NoError(t, errs[0])
	assert.ErrorIs(t, errs[1], metadata.ErrInvalidQuota)
	assert.Equal(t, metadata.QuotaEntity{ClientID: metadata.QuotaDefault}, entities[2])
	assert.Equal(t, index, log.Image().Index, "validate_only commits nothing")

	_, errs, err = c.AlterQuotas(ctx, alts, false)
	require.NoError(t, err)
	assert.ErrorIs(t, errs[1], metadata.ErrInvalidQuota)
	im := log.Image()
	assert.Equal(t, index+1, im.Index, "one record for the request")
	assert.Equal(t, map[string]float64{metadata.QuotaProducerByteRate: 1024}, im.QuotaValues(metadata.QuotaEntity{User: metadata.QuotaNamed("alice")}))
	assert.Nil(t, im.QuotaValues(metadata.QuotaEntity{User: metadata.QuotaNamed("bob")}), "refused alone")
	q, ok := im.ClientQuota(metadata.QuotaConsumerByteRate, "carol", "any")
	require.True(t, ok)
	assert.Equal(t, float64(4096), q.Limit)

	c.LeaderChanged(2, false)
	_, _, err = c.AlterQuotas(ctx, alts, false)
	assert.ErrorIs(t, err, ErrNotController)
	_, _, err = c.AlterQuotas(ctx, alts, true)
	assert.ErrorIs(t, err, ErrNotController, "validate_only too, as Kafka's controller validates")
}
