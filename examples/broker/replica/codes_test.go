package replica

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

func TestErrorCodeOfTransactionErrors(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want *kerr.Error
	}{
		{"not transactional in a transaction", storage.ErrInvalidTxnState, kerr.InvalidTxnState},
		{"a marker from a fenced coordinator", storage.ErrCoordinatorFenced, kerr.TransactionCoordinatorFenced},
		{"a stale producer epoch", storage.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want.Code, ErrorCode(fmt.Errorf("t-0: %w", tt.err)), "wrapped, as storage returns it")
		})
	}
}
