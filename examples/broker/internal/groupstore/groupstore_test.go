package groupstore

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestStoreErrorsAsKafkaMapsThem: a heartbeat whose write failed is
// answered as Kafka's GroupCoordinatorService answers it: what a member
// retries (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR) for a write that
// timed out or found too few replicas or no leader, never the write's own
// REQUEST_TIMED_OUT, which ends a kgo member's join.
func TestStoreErrorsAsKafkaMapsThem(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want *kerr.Error
	}{
		{kerr.RequestTimedOut, kerr.CoordinatorNotAvailable},
		{fmt.Errorf("append: %w", kerr.NotEnoughReplicas), kerr.CoordinatorNotAvailable},
		{kerr.NotEnoughReplicasAfterAppend, kerr.CoordinatorNotAvailable},
		{kerr.UnknownTopicOrPartition, kerr.CoordinatorNotAvailable},
		{kerr.NotLeaderForPartition, kerr.NotCoordinator},
		{kerr.MessageTooLarge, kerr.UnknownServerError},
		{kerr.CoordinatorLoadInProgress, kerr.CoordinatorLoadInProgress},
		{errors.New("closed"), kerr.NotCoordinator},
	} {
		assert.Equal(t, tt.want, Error(tt.err), "%v", tt.err)
	}
}
