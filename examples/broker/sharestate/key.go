package sharestate

import (
	"encoding/base64"
	"strconv"
	"strings"
)

// Key names a share partition's state: a share group's state of one
// partition of a topic (Kafka's SharePartitionKey).
type Key struct {
	Group     string
	Topic     [16]byte // the topic's id
	Partition int32
}

// String is the key's coordinator key, "groupId:topicId:partition" with
// the topic id as Kafka prints a Uuid (URL-safe base64, unpadded): Kafka's
// SharePartitionKey.asCoordinatorKey, which places the key in its
// partition of __share_group_state (coordinator.PartitionFor) and which a
// FindCoordinator of key type SHARE names. O(len(Group)).
// It is made with one allocation: every state write asks for it.
func (k Key) String() string {
	var topic [22]byte // 16 bytes in unpadded base64
	base64.RawURLEncoding.Encode(topic[:], k.Topic[:])
	var part [11]byte
	p := strconv.AppendInt(part[:0], int64(k.Partition), 10)
	var b strings.Builder
	b.Grow(len(k.Group) + 2 + len(topic) + len(p))
	b.WriteString(k.Group)
	b.WriteByte(':')
	b.Write(topic[:])
	b.WriteByte(':')
	b.Write(p)
	return b.String()
}
