package server

// ListOffsets: v1-v11.
//
// Answers, per partition, an offset by its timestamp query: -2 the log
// start offset (earliest), -1 the high watermark, or the last stable
// offset with read_committed (latest; a request from a replica id other
// than -1 gets the log end, as Kafka gives followers and debug tools), -3
// the batch with the largest timestamp (v7+; its last offset, with its max
// timestamp), -4 the earliest local offset (v8+; the log start, as every
// batch is local). A timestamp of 0 or more finds the first batch whose
// max timestamp is at or after it, and answers the batch's base offset and
// max timestamp: the granularity is the batch, as records are not decoded,
// so the offset may be a few records early, never late. No such batch is
// offset -1, timestamp -1, as in Kafka. The leader epoch (v4+) is 0 when an
// offset is found; current_leader_epoch is checked as Fetch checks it.
// A partition listed twice is INVALID_REQUEST, as in Kafka. A topic the
// client may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED for each of its
// partitions, before any other check (authz.go).
//
// Not implemented: tiered storage, so -5 (latest tiered, v9+) and -6
// (earliest pending upload, v11) answer offset -1, as Kafka does with
// remote storage off; the timeout (v10+: every answer is immediate).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/replica"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.ListOffsets, 1, 11, (*Server).handleListOffsets) }

// The special timestamps of ListOffsets.
const (
	listLatest          = -1
	listEarliest        = -2
	listMaxTimestamp    = -3
	listEarliestLocal   = -4
	listLatestTiered    = -5
	listEarliestPending = -6
)

func (s *Server) handleListOffsets(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	iso := storage.ReadUncommitted
	var isoErr error
	switch {
	case req.ReplicaID != -1:
		iso = storage.ReadReplica
	case req.IsolationLevel == 1:
		iso = storage.ReadCommitted
	case req.IsolationLevel != 0:
		isoErr = fmt.Errorf("%w: isolation level %d", errInvalidRequest, req.IsolationLevel)
	}
	c := s.access(r)
	listed := make(map[replica.TP]int)
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			listed[replica.TP{Topic: rt.Topic, Partition: rp.Partition}]++
		}
	}
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		topic, terr := s.replicas.Store().Topic(rt.Topic)
		denied := c.TopicCode(opDescribe, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			var (
				p   *storage.Partition
				err = isoErr
			)
			switch {
			case denied != 0:
				sp.ErrorCode = denied
			case err != nil:
			case listed[replica.TP{Topic: rt.Topic, Partition: rp.Partition}] > 1:
				err = fmt.Errorf("%w: partition %s-%d is listed more than once", errInvalidRequest, rt.Topic, rp.Partition)
			case terr != nil:
				err = terr
			default:
				if p, err = topic.Partition(rp.Partition); err == nil {
					err = s.replicas.Leads(p)
				}
				if err == nil {
					sp.ErrorCode = replica.EpochErrorCode(rp.CurrentLeaderEpoch, p.LeaderEpoch())
					if sp.ErrorCode == 0 {
						err = listOffset(p, rp.Timestamp, iso, &sp)
					}
				}
			}
			if err != nil {
				sp.ErrorCode = errorCode(err)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	r.Respond(resp)
}

// listOffset answers one partition's query into sp, whose offset,
// timestamp and leader epoch start at -1 (not found).
func listOffset(p *storage.Partition, ts int64, iso storage.Isolation, sp *kmsg.ListOffsetsResponseTopicPartition) error {
	o, err := p.Offsets()
	if err != nil {
		return err
	}
	var (
		offset, timestamp int64 = -1, -1
		found             bool
	)
	switch ts {
	case listEarliest, listEarliestLocal:
		offset, found = o.LogStart, true
	case listLatest:
		switch iso {
		case storage.ReadCommitted:
			offset = o.LastStable
		case storage.ReadReplica:
			offset = o.LogEnd
		default:
			offset = o.HighWatermark
		}
		found = true
	case listMaxTimestamp:
		offset, timestamp, found, err = p.MaxTimestamp(iso)
	case listLatestTiered, listEarliestPending:
		// No tiered storage: nothing is remote.
	default:
		offset, timestamp, found, err = p.Timestamp(ts, iso)
	}
	if err != nil || !found {
		return err
	}
	sp.Offset, sp.Timestamp, sp.LeaderEpoch = offset, timestamp, p.LeaderEpoch()
	return nil
}
