package cluster

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

// holdingPeer is a peer that answers ApiVersions and AddPartitionsToTxn
// at once and holds every OffsetForLeaderEpoch until the test lets it go,
// as a broker holds any request that waits for something else.
type holdingPeer struct{ held chan *kafkanet.Request }

func (p holdingPeer) Supports(key, version int16) bool {
	switch key {
	case kmsg.ApiVersions.Int16(), kmsg.AddPartitionsToTxn.Int16(), kmsg.OffsetForLeaderEpoch.Int16():
		return version >= 0 && version <= kmsg.ResponseForKey(key).MaxVersion()
	}
	return false
}

func (p holdingPeer) ServeKafka(r *kafkanet.Request) {
	switch req := r.Msg.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		for _, key := range []kmsg.Key{kmsg.ApiVersions, kmsg.AddPartitionsToTxn, kmsg.OffsetForLeaderEpoch} {
			k := kmsg.NewApiVersionsResponseApiKey()
			k.ApiKey, k.MaxVersion = key.Int16(), kmsg.ResponseForKey(key.Int16()).MaxVersion()
			resp.ApiKeys = append(resp.ApiKeys, k)
		}
		r.Respond(resp)
	case *kmsg.OffsetForLeaderEpochRequest:
		p.held <- r
	default:
		r.Respond(r.Msg.ResponseKind())
	}
}

// TestChannelsDoNotWaitBehindEachOther: a peer answers a connection's
// requests in order, so a request that waits at the peer holds back
// every later one on its connection (kgo gives fetches a connection of
// their own, but sends a follower's OffsetForLeaderEpoch, its
// AlterPartition and its heartbeat on one). A request sent on another
// Channel is answered meanwhile: a KIP-890 AddPartitionsToTxn, which at
// transaction version 2 waits for the producer's previous markers, no
// longer holds back the follower's truncation those markers' replication
// needs (on Replication, the test times out).
func TestChannelsDoNotWaitBehindEachOther(t *testing.T) {
	held := make(chan *kafkanet.Request, 1)
	srv, err := kafkanet.New(holdingPeer{held: held})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		require.NoError(t, srv.Close())
		<-served
	}()

	brokers, err := Parse("1@127.0.0.1:1,2@"+ln.Addr().String(), "1@127.0.0.1:2,2@127.0.0.1:3", 1)
	require.NoError(t, err)
	m, err := New(Config{Brokers: brokers})
	require.NoError(t, err)
	defer func() { require.NoError(t, m.Close(context.Background(), false)) }()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	truncated := make(chan error, 1)
	go func() {
		_, err := m.Request(ctx, 2, kmsg.NewPtrOffsetForLeaderEpochRequest())
		truncated <- err
	}()
	var truncation *kafkanet.Request
	select {
	case truncation = <-held:
	case <-ctx.Done():
		t.Fatal("the OffsetForLeaderEpoch never reached the peer")
	}

	addCtx, addCancel := context.WithTimeout(ctx, 3*time.Second)
	defer addCancel()
	_, err = m.RequestOn(addCtx, Transactions, 2, kmsg.NewPtrAddPartitionsToTxnRequest())
	require.NoError(t, err, "answered while the OffsetForLeaderEpoch is held on the Replication connection")

	truncation.Respond(truncation.Msg.ResponseKind())
	require.NoError(t, <-truncated)
}
