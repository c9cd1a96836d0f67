package sharestate

import (
	"encoding/base64"
	"strconv"
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
func (k Key) String() string {
	return k.Group + ":" + base64.RawURLEncoding.EncodeToString(k.Topic[:]) + ":" + strconv.Itoa(int(k.Partition))
}
