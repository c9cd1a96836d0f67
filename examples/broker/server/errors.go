package server

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gopurgatory/purgatory/examples/broker/replica"
)

// errNotController is wrapped for a request only the active controller
// serves (NOT_CONTROLLER).
var errNotController = errors.New("not the controller")

// errTopicAuthorization is a topic the client may not act on
// (TOPIC_AUTHORIZATION_FAILED, with Kafka's message).
var errTopicAuthorization = errors.New("Authorization failed.") // Kafka's message, as clients show it

// errDeletePolicy is a DeleteRecords on a topic whose cleanup.policy
// does not delete (POLICY_VIOLATION).
var errDeletePolicy = errors.New("policy violation")

// requestCodes maps the handlers' own errors to the Kafka error codes a
// client acts on; replica.ErrorCode maps those of the data path and of
// what it stands on.
var requestCodes = []struct {
	err  error
	code *kerr.Error
}{
	{errReplicationFactor, kerr.InvalidReplicationFactor},
	{errReplicaAssignment, kerr.InvalidReplicaAssignment},
	{errInvalidRequest, kerr.InvalidRequest},
	{errNotController, kerr.NotController},
	{errTopicAuthorization, kerr.TopicAuthorizationFailed},
	{errLeaderNotAvailable, kerr.LeaderNotAvailable},
	{errDeletePolicy, kerr.PolicyViolation},
	{errThrottlingQuota, kerr.ThrottlingQuotaExceeded},
}

// errorCode returns the Kafka error code for err: 0 for nil, the mapped
// code of a handler's error, else replica.ErrorCode's (KAFKA_STORAGE_ERROR
// for an error nobody maps, which can only come from the log itself).
func errorCode(err error) int16 {
	for _, m := range requestCodes {
		if errors.Is(err, m.err) {
			return m.code.Code
		}
	}
	return replica.ErrorCode(err)
}

// errorMessage returns err's text for the error message fields of newer
// versions, or nil, cut to replica.MaxErrorMessage bytes.
func errorMessage(err error) *string { return replica.ErrorMessage(err) }

// maxErrorMessage bounds the error messages of responses.
const maxErrorMessage = replica.MaxErrorMessage

// truncate cuts s to at most n bytes, marking the cut, at a rune boundary.
func truncate(s string, n int) string { return replica.Truncate(s, n) }

// kafkaError is a handler's error whose text is Kafka's own message, as
// clients show it (an error_message field), without the sentinel's prefix.
type kafkaError struct {
	err error // the sentinel, for errors.Is and errorCode
	msg string
}

func (e *kafkaError) Error() string { return e.msg }
func (e *kafkaError) Unwrap() error { return e.err }

// kafkaErrorf returns err with Kafka's message, formatted.
func kafkaErrorf(err error, format string, args ...any) error {
	return &kafkaError{err: err, msg: fmt.Sprintf(format, args...)}
}
