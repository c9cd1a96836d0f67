package sharegroup

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The errors the Coordinator answers are Kafka's, to be written back as
// their codes (kerr.Error).
var (
	ErrUnknownMember     = kerr.UnknownMemberID
	ErrFencedMemberEpoch = kerr.FencedMemberEpoch
	ErrInvalidRequest    = kerr.InvalidRequest
	ErrGroupNotFound     = kerr.GroupIDNotFound
	ErrGroupMaxSize      = kerr.GroupMaxSizeReached
	ErrNotCoordinator    = kerr.NotCoordinator
	// ErrInvalidConfig is wrapped by New for a Config it cannot run with.
	ErrInvalidConfig = errors.New("sharegroup: invalid config")
)
