package operation

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"

	"github.com/gopurgatory/purgatory/internal/lifecycle"
)

func TestOutcomeNames(t *testing.T) {
	want := []string{"completed", "expired", "forced", "cancelled", "closed", "rejected", "context_done"}
	for i, o := range Outcomes() {
		assert.Equal(t, want[i], o.String())
	}
	assert.Equal(t, "pending", Pending.String())
	assert.Equal(t, "unknown", Outcome(99).String())
}

// Outcome converts the lifecycle's outcome by value: the two lists must be
// the same.
func TestOutcomesAreTheLifecycles(t *testing.T) {
	for _, o := range append([]Outcome{Pending}, Outcomes()...) {
		var l lifecycle.Outcome
		switch o {
		case Pending:
			l = lifecycle.Pending
		case Completed:
			l = lifecycle.Completed
		case Expired:
			l = lifecycle.Expired
		case Forced:
			l = lifecycle.Forced
		case Cancelled:
			l = lifecycle.Cancelled
		case Closed:
			l = lifecycle.Closed
		case Rejected:
			l = lifecycle.Rejected
		case ContextDone:
			l = lifecycle.ContextDone
		}
		assert.Equal(t, uint32(l), uint32(o), o.String())
	}
	assert.Len(t, Outcomes(), lifecycle.NumOutcomes-1)
}

// State is what every operation pays in its own allocation: the size its
// documentation states, so that a field added to it is a decision.
func TestStateSize(t *testing.T) {
	const word = unsafe.Sizeof(uintptr(0))
	if word == 8 { // the documented size is a 64-bit platform's
		assert.Equal(t, uintptr(104), unsafe.Sizeof(State{}))
	}
}
