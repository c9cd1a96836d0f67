package acl

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

var (
	// ErrInvalidBinding is returned for a binding that CreateAcls refuses:
	// see [Binding.Validate]. Its Kafka code is INVALID_REQUEST.
	ErrInvalidBinding = errors.New("acl: invalid binding")
	// ErrInvalidFilter is returned for a filter that DescribeAcls and
	// DeleteAcls refuse: see [Filter.Validate]. Its Kafka code is
	// INVALID_REQUEST.
	ErrInvalidFilter = errors.New("acl: invalid filter")
	// ErrCorruptRecord is returned by [DecodeBinding] for bytes that are
	// not a binding written by [Binding.AppendBinary]. A decoded binding
	// that fails validation is also ErrInvalidBinding.
	ErrCorruptRecord = errors.New("acl: corrupt binding record")
	// ErrInvalidOption is returned by [New] for an option it cannot use,
	// such as a super user that is not a "Type:name" principal.
	ErrInvalidOption = errors.New("acl: invalid option")
)

// Code returns the Kafka error code a handler answers err with: 0 for nil,
// the code of the [kerr.Error] that err wraps (INVALID_REQUEST for the
// errors of this package's validation), UNKNOWN_SERVER_ERROR otherwise.
// The error's text is the message for the response's error_message.
func Code(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// codedError is a failure of one kind (a sentinel above) that maps to one
// Kafka error code: errors.Is finds both, errors.As finds the *kerr.Error.
type codedError struct {
	kind error
	code *kerr.Error
	msg  string
}

func (e *codedError) Error() string   { return e.kind.Error() + ": " + e.msg }
func (e *codedError) Unwrap() []error { return []error{e.kind, e.code} }

func invalidBinding(format string, args ...any) error {
	return &codedError{ErrInvalidBinding, kerr.InvalidRequest, fmt.Sprintf(format, args...)}
}

func invalidFilter(format string, args ...any) error {
	return &codedError{ErrInvalidFilter, kerr.InvalidRequest, fmt.Sprintf(format, args...)}
}
