package storage

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The topic configs of replication throttles (KIP-73), as Kafka names
// them: which replicas of the topic the brokers' replication quotas
// (leader.replication.throttled.rate, follower.replication.throttled.rate)
// apply to. The storage only keeps them; package replica enforces them.
const (
	ConfigLeaderThrottledReplicas   = "leader.replication.throttled.replicas"
	ConfigFollowerThrottledReplicas = "follower.replication.throttled.replicas"
)

// ThrottledReplicas is a topic's leader.replication.throttled.replicas or
// follower.replication.throttled.replicas: "*" (every replica), a list of
// partition:broker entries joined by commas, or "" (none, Kafka's
// default). It is kept normalized (ParseThrottledReplicas), so that it
// compares, and lists back, the same however it was spaced.
//
// A broker reads the entries that name it (Kafka's TopicConfigHandler):
// the leader's list throttles what the named broker, while it leads the
// partition, sends to followers out of its ISR; the follower's list
// throttles what the named broker fetches as a follower of it.
type ThrottledReplicas string

// AllThrottled is the literal '*': every replica of the topic throttled.
const AllThrottled ThrottledReplicas = "*"

// ParseThrottledReplicas reads v as Kafka's ThrottledReplicaListValidator
// takes it: split on commas, each entry trimmed, either the literal '*'
// alone or entries of partitionId:brokerId (non-negative integers that fit
// an int32), empty entries allowed only at the end. Anything else is an
// error wrapping ErrInvalidConfig, with Kafka's message. O(len(v)).
func ParseThrottledReplicas(name, v string) (ThrottledReplicas, error) {
	entries := strings.Split(v, ",")
	for i := range entries {
		entries[i] = strings.TrimSpace(entries[i])
	}
	if len(entries) == 1 && entries[0] == "*" {
		return AllThrottled, nil
	}
	var kept []string
	empty := false
	for _, e := range entries {
		switch {
		case e == "":
			empty = true
			continue
		case empty || !validReplica(e):
			return "", fmt.Errorf("%w: %s=%q: %s must be the literal '*' or a list of replicas in the following format: "+
				"[partitionId]:[brokerId],[partitionId]:[brokerId],...", ErrInvalidConfig, name, v, name)
		}
		kept = append(kept, e)
	}
	return ThrottledReplicas(strings.Join(kept, ",")), nil
}

// validReplica reports whether e is partitionId:brokerId, two
// non-negative int32s in decimal digits.
func validReplica(e string) bool {
	p, b, ok := strings.Cut(e, ":")
	return ok && digitsInt32(p) && digitsInt32(b)
}

func digitsInt32(s string) bool {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return err == nil && v <= math.MaxInt32
}

// Names reports whether the list throttles partition on broker: it is
// '*', or has the entry partition:broker. The list is not parsed ahead:
// a topic without one (the usual case) answers at once; one with n
// entries costs O(n) string work per call.
func (r ThrottledReplicas) Names(partition, broker int32) bool {
	switch r {
	case "":
		return false
	case AllThrottled:
		return true
	}
	want := strconv.FormatInt(int64(partition), 10) + ":" + strconv.FormatInt(int64(broker), 10)
	for rest := string(r); rest != ""; {
		var e string
		e, rest, _ = strings.Cut(rest, ",")
		if e == want {
			return true
		}
	}
	return false
}

// withThrottled is With for the throttled-replica lists; known is false
// for a name that is not one of them. A nil value keeps the default.
func (c TopicConfig) withThrottled(name string, value *string) (next TopicConfig, known bool, err error) {
	var field *ThrottledReplicas
	switch name {
	case ConfigLeaderThrottledReplicas:
		field = &c.LeaderThrottled
	case ConfigFollowerThrottledReplicas:
		field = &c.FollowerThrottled
	default:
		return c, false, nil
	}
	if value == nil {
		return c, true, nil
	}
	r, err := ParseThrottledReplicas(name, *value)
	if err != nil {
		return c, true, err
	}
	*field = r
	return c, true, nil
}

// throttledValues lists the throttled-replica lists of c, by name.
func (c TopicConfig) throttledValues() []ConfigValue {
	return []ConfigValue{
		{ConfigFollowerThrottledReplicas, string(c.FollowerThrottled)},
		{ConfigLeaderThrottledReplicas, string(c.LeaderThrottled)},
	}
}
