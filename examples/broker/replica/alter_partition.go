package replica

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/controller"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
)

// ControllerEnv is how a leader reaches the active controller: its own,
// when this broker is the active controller, or the one the metadata
// quorum's leader runs, through an AlterPartition request.
type ControllerEnv interface {
	// Local returns this broker's controller if it is the active one,
	// else nil.
	Local() *controller.Controller
	// Leader returns the active controller's broker id, or a negative id
	// while the quorum elects one.
	Leader() int32
	// Request sends req to broker alone and returns its answer.
	Request(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error)
}

// AlterPartition asks the active controller to set the ISR of f's
// partition, which broker self (at broker epoch brokerEpoch) leads at st,
// to isr (Kafka's AlterPartition, checked against st's leader and
// partition epochs). What the controller commits reaches the broker
// through the metadata log; the error says only that this change was not
// committed. It blocks until the controller answers or ctx is done, and
// does not end f's change in flight: the caller calls f.Done.
func AlterPartition(ctx context.Context, env ControllerEnv, self int32, brokerEpoch int64, f *Followers, st metadata.Partition, isr []int32) error {
	p := f.Partition()
	if ctrl := env.Local(); ctrl != nil {
		_, err := ctrl.AlterPartition(ctx, metadata.TopicID(p.Topic().ID), p.Index(), self, st.LeaderEpoch, st.PartitionEpoch, isr)
		return err
	}
	leader := env.Leader()
	if leader < 0 {
		return errors.New("no active controller")
	}
	req := kmsg.NewPtrAlterPartitionRequest()
	req.BrokerID, req.BrokerEpoch = self, brokerEpoch
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.Topic, rt.TopicID = p.Topic().Name, p.Topic().ID
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch, rp.NewISR = p.Index(), st.LeaderEpoch, st.PartitionEpoch, isr
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := env.Request(ctx, leader, req)
	if err != nil {
		return err
	}
	ar := resp.(*kmsg.AlterPartitionResponse)
	if err := kerr.ErrorForCode(ar.ErrorCode); err != nil {
		return err
	}
	if len(ar.Topics) == 1 && len(ar.Topics[0].Partitions) == 1 {
		return kerr.ErrorForCode(ar.Topics[0].Partitions[0].ErrorCode)
	}
	return errors.New("alter partition: the answer does not match the request")
}
