package server

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestStringsPastKafkasLimits: a group id past 32,767 bytes (the issue's
// was 100 KB), another string of a group request past it, and a client
// software name that is not Kafka's pattern or past 255 bytes (the
// issue's was 50 MB) are refused with the API's error code, counted, and
// never reach the coordinator.
func TestStringsPastKafkasLimits(t *testing.T) {
	s := newTestServer(t)
	long := strings.Repeat("g", 100<<10)
	join := func(group, protocolType string) *kmsg.JoinGroupRequest {
		req := kmsg.NewPtrJoinGroupRequest()
		req.SetVersion(9)
		req.Group, req.ProtocolType = group, protocolType
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10_000, 10_000
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
		return req
	}
	describe := kmsg.NewPtrDescribeGroupsRequest()
	describe.SetVersion(5)
	describe.Groups = []string{"fine", long}
	software := func(name string) *kmsg.ApiVersionsRequest {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(3)
		req.ClientSoftwareName, req.ClientSoftwareVersion = name, "1.0"
		return req
	}
	tests := []struct {
		name string
		req  kmsg.Request
		code func(kmsg.Response) int16
		want *kerr.Error
	}{
		{"group id", join(long, "consumer"), func(r kmsg.Response) int16 { return r.(*kmsg.JoinGroupResponse).ErrorCode }, kerr.InvalidGroupID},
		{"protocol type", join("g", long), func(r kmsg.Response) int16 { return r.(*kmsg.JoinGroupResponse).ErrorCode }, kerr.InvalidRequest},
		{"a group among others", describe, func(r kmsg.Response) int16 { return r.(*kmsg.DescribeGroupsResponse).Groups[1].ErrorCode }, kerr.InvalidGroupID},
		{"software name pattern", software("not a name!"), func(r kmsg.Response) int16 { return r.(*kmsg.ApiVersionsResponse).ErrorCode }, kerr.InvalidRequest},
		{"software name length", software(strings.Repeat("a", 1<<20)), func(r kmsg.Response) int16 { return r.(*kmsg.ApiVersionsResponse).ErrorCode }, kerr.InvalidRequest},
	}
	c := dialRaw(t, s)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := c.RoundTrip(tt.req)
			assert.Equal(t, tt.want.Code, tt.code(resp), "got %v", kerr.ErrorForCode(tt.code(resp)))
			assert.Equal(t, float64(i+1), refused(s, refuseInvalidString))
		})
	}
	av := c.RoundTrip(software("kgo")).(*kmsg.ApiVersionsResponse)
	assert.Equal(t, int16(0), av.ErrorCode, "a name of the pattern is fine")
	require.NotEmpty(t, av.ApiKeys)
	groups, gerr := s.groups.ListGroups()
	require.Nil(t, gerr)
	assert.Empty(t, groups, "no group was made")
}

// TestMaxBrokerPartitions: a creation past max.broker.partitions, all
// topics together, is POLICY_VIOLATION with a message, validate_only
// included, and counted; a deletion makes room; the limit holds in
// memory too (the 4 x 65,536 partitions in one request).
func TestMaxBrokerPartitions(t *testing.T) {
	// One of the ten is kept for the offsets topic, not created yet.
	s := newTestServer(t, func(c *Config) { c.MaxBrokerPartitions, c.OffsetsTopicPartitions = 10, 1 })
	c := dialRaw(t, s)
	create := func(validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) []kmsg.CreateTopicsResponseTopic {
		req := createTopicsRequest(7, topics...)
		req.ValidateOnly = validateOnly
		return c.RoundTrip(req).(*kmsg.CreateTopicsResponse).Topics
	}
	got := create(false, newTopic("a", 6, 1), newTopic("b", 3, 1), newTopic("c", 2, 1))
	assert.Equal(t, int16(0), got[0].ErrorCode)
	assert.Equal(t, int16(0), got[1].ErrorCode)
	assert.Equal(t, kerr.PolicyViolation.Code, got[2].ErrorCode, "9 + 2 > 10 - 1")
	require.NotNil(t, got[2].ErrorMessage)
	assert.Contains(t, *got[2].ErrorMessage, "max.broker.partitions")
	assert.Equal(t, kerr.PolicyViolation.Code, create(true, newTopic("c", 2, 1))[0].ErrorCode, "validate_only says so too")
	assert.Equal(t, 2.0, refused(s, refusePartitionLimit))
	assert.Equal(t, kerr.PolicyViolation.Code, create(false, newTopic("d", 1, 1))[0].ErrorCode,
		"the tenth partition is the offsets topic's")
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(3)
	fc.CoordinatorKey = "g"
	assert.Equal(t, int16(0), c.RoundTrip(fc).(*kmsg.FindCoordinatorResponse).ErrorCode,
		"a group's first use creates the offsets topic in its room")

	deleteTopic(t, s, "a")
	assert.Equal(t, int16(0), create(false, newTopic("c", 2, 1))[0].ErrorCode, "room again")
}
