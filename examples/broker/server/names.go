package server

import (
	"fmt"
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/internal/authz"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

// Limits on the strings of requests, checked before a request reaches its
// handler. Kafka's:
//
//   - A topic name: 249 characters of [a-zA-Z0-9._-], not "." or ".."
//     (storage.ValidateTopicName); each API answers an invalid one with its
//     own code, as Kafka does.
//   - A client id: the header's int16-length string, 32,767 bytes at most
//     by its encoding.
//   - A group id, and the other strings of the group APIs (member and
//     instance ids, protocol type and names, reasons): 32,767 bytes, the
//     most Kafka can write, since its offsets topic keeps group ids,
//     member ids and protocol names in int16-length strings (so does this
//     broker's: a longer one would be cut there). A longer group id
//     is INVALID_GROUP_ID, any other string INVALID_REQUEST, for the whole
//     request.
//   - ApiVersions' client_software_name and client_software_version (v3+):
//     Kafka's pattern, [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?, else
//     INVALID_REQUEST; and, this broker's own bound (Kafka has none but the
//     request's size), maxSoftwareName bytes.
const (
	maxGroupString  = 1<<15 - 1
	maxSoftwareName = 255
)

var softwareNamePattern = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

// checkStrings refuses a request whose strings exceed the limits above
// with the error response its API gives, and reports whether it did: the
// handler is not called then.
func (s *Server) checkStrings(r *kafkanet.Request) bool {
	code, what := stringsError(r.Msg)
	if code == 0 {
		return false
	}
	r.Refuse(refuseInvalidString, zap.String("api", kmsg.NameForKey(r.Msg.Key())), zap.String("what", what))
	if _, ok := r.Msg.(*kmsg.ApiVersionsRequest); ok {
		resp := s.apiVersionsResponse()
		resp.ErrorCode = code // Kafka answers INVALID_REQUEST with the ranges
		r.Respond(resp)
		return true
	}
	r.Respond(authz.ErrorResponse(r.Msg, code))
	return true
}

// stringsError returns the error code and a description of the first
// string of req past its limit, or 0.
func stringsError(req kmsg.Request) (int16, string) {
	groups, others := groupStrings(req)
	for _, g := range groups {
		if len(g) > maxGroupString {
			return kerr.InvalidGroupID.Code, fmt.Sprintf("a group id of %d bytes", len(g))
		}
	}
	for _, o := range others {
		if len(o) > maxGroupString {
			return kerr.InvalidRequest.Code, fmt.Sprintf("a string of %d bytes", len(o))
		}
	}
	if av, ok := req.(*kmsg.ApiVersionsRequest); ok && av.Version >= 3 {
		for _, name := range []string{av.ClientSoftwareName, av.ClientSoftwareVersion} {
			if len(name) > maxSoftwareName || !softwareNamePattern.MatchString(name) {
				return kerr.InvalidRequest.Code, fmt.Sprintf("a client software name or version of %d bytes that is not [a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?", len(name))
			}
		}
	}
	return 0, ""
}

// groupStrings returns the group ids a group request names, and its other
// strings that the group coordinator keeps or logs.
func groupStrings(req kmsg.Request) (groups, others []string) {
	switch req := req.(type) {
	case *kmsg.JoinGroupRequest:
		others = []string{req.MemberID, orEmpty(req.InstanceID), req.ProtocolType, orEmpty(req.Reason)}
		for _, p := range req.Protocols {
			others = append(others, p.Name)
		}
		return []string{req.Group}, others
	case *kmsg.SyncGroupRequest:
		others = []string{req.MemberID, orEmpty(req.InstanceID), orEmpty(req.ProtocolType), orEmpty(req.Protocol)}
		for _, a := range req.GroupAssignment {
			others = append(others, a.MemberID)
		}
		return []string{req.Group}, others
	case *kmsg.HeartbeatRequest:
		return []string{req.Group}, []string{req.MemberID, orEmpty(req.InstanceID)}
	case *kmsg.LeaveGroupRequest:
		others = []string{req.MemberID}
		for _, m := range req.Members {
			others = append(others, m.MemberID, orEmpty(m.InstanceID), orEmpty(m.Reason))
		}
		return []string{req.Group}, others
	case *kmsg.OffsetCommitRequest:
		return []string{req.Group}, []string{req.MemberID, orEmpty(req.InstanceID)}
	case *kmsg.TxnOffsetCommitRequest:
		return []string{req.Group}, []string{req.TransactionalID, req.MemberID, orEmpty(req.InstanceID)}
	case *kmsg.OffsetFetchRequest:
		groups = []string{req.Group}
		for _, g := range req.Groups {
			groups = append(groups, g.Group)
			others = append(others, orEmpty(g.MemberID))
		}
		return groups, others
	case *kmsg.OffsetDeleteRequest:
		return []string{req.Group}, nil
	case *kmsg.DescribeGroupsRequest:
		return req.Groups, nil
	case *kmsg.DeleteGroupsRequest:
		return req.Groups, nil
	case *kmsg.FindCoordinatorRequest:
		return append([]string{req.CoordinatorKey}, req.CoordinatorKeys...), nil
	}
	return nil, nil
}
