package coordinator

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestPartitionForIsKafkas: a group has the partition Kafka gives it,
// abs(groupId.hashCode) % partitions, with Java's String.hashCode over
// UTF-16 code units and Kafka's Utils.abs (n & 0x7fffffff).
func TestPartitionForIsKafkas(t *testing.T) {
	for _, tt := range []struct {
		name  string
		group string
		hash  int32 // Java's "...".hashCode()
		part  int32 // of 50
	}{
		{"empty", "", 0, 0},
		{"one letter", "a", 97, 47},
		{"word", "hello", 99162322, 22},
		{"collision Aa", "Aa", 2112, 12},
		{"collision BB", "BB", 2112, 12},
		{"overflow to MIN_VALUE, whose abs is 0 in Kafka", "polygenelubricants", -2147483648, 0},
		{"negative", "my-group", -1906497762, 36},
		{"latin-1", "é", 233, 33},
		{"outside the BMP: two surrogates", "\U0001F600", 1772899, 49},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.hash, javaStringHash(tt.group), "String.hashCode")
			assert.Equal(t, tt.part, PartitionFor(tt.group, 50), "PartitionFor")
		})
	}
}

// TestTopicSpecWithDefaults: a service's zero settings take the defaults,
// the ones set are kept, and a negative one is refused, named.
func TestTopicSpecWithDefaults(t *testing.T) {
	def := TopicSpec{Partitions: 50, ReplicationFactor: 3, MinInsyncReplicas: 2, AppendTimeout: 30 * time.Second}
	got, err := TopicSpec{Name: "__x", ReplicationFactor: 1, CompactionDeadRecords: 7}.WithDefaults(def)
	assert.NoError(t, err)
	assert.Equal(t, TopicSpec{Name: "__x", Partitions: 50, ReplicationFactor: 1, MinInsyncReplicas: 2,
		AppendTimeout: 30 * time.Second, CompactionDeadRecords: 7}, got)
	_, err = TopicSpec{Name: "__x", MinInsyncReplicas: -1}.WithDefaults(def)
	assert.ErrorContains(t, err, "__x")
}
