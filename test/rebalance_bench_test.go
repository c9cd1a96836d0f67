package test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The settings both protocols' members run with. A member learns of a
// rebalance, of partitions to give up and of partitions freed for it
// only from a heartbeat's response, in either protocol, so the interval
// paces every round; 250ms keeps the rounds short without 100 members'
// heartbeats (400 a second) becoming the broker's load.
const (
	rebalanceSession   = 10 * time.Second       // session.timeout.ms; group.consumer.session.timeout.ms
	rebalanceHeartbeat = 250 * time.Millisecond // heartbeat.interval.ms; group.consumer.heartbeat.interval.ms
	rebalanceTimeout   = 30 * time.Second       // rebalance.timeout.ms (classic's join phase, KIP-848's revocation)
	rebalanceDeadline  = 2 * time.Minute        // a group not settled by then fails the benchmark
)

// BenchmarkGroupRebalance measures how long a consumer group takes to
// settle, with the classic protocol (JoinGroup and SyncGroup, package
// group, the members assigning with kgo's cooperative-sticky balancer)
// and with KIP-848's (ConsumerGroupHeartbeat, package consumergroup, the
// broker assigning with "uniform", the server-side counterpart of
// cooperative-sticky that kgo.ServerSideBalancer asks for), on the same
// broker binary in a child process of its own, started afresh for each
// run, so that the 100 clients' CPU is not counted with the broker's.
//
// The topic has twice as many partitions as the group has members, so
// that every member owns one or more before and after the newcomer. Two
// times are taken, each until the group is settled: the members'
// OnPartitionsAssigned, Revoked and Lost callbacks show every partition
// owned by exactly one member and the partitions shared evenly (no member
// owning more than one more than another, none without any), and the
// group describes itself (DescribeGroups, ConsumerGroupDescribe) as Stable
// with all its members, the callbacks unchanged meanwhile:
//
//   - rebalance-ms: PURGATORY_REBALANCE_MEMBERS members (100 unless set)
//     started together into the empty group, from the first one's start;
//   - join-ms: one more member joining that settled group, from its start.
//
// rebalance-broker-cpu-ms and join-broker-cpu-ms are the broker process's
// CPU time (user and system, from /proc, in 10ms ticks) over each; the
// benchmark's describes, one every 5ms once the callbacks show a settled
// group, are counted in it. assigned-ms and join-assigned-ms are when the
// callbacks last changed, the end of the work the group did: the times
// above less the describes' lag.
//
// The broker runs with group.initial.rebalance.delay.ms 0 (Kafka's
// default is 3s): a classic group's first rebalance would otherwise wait
// that long for more members, and the comparison would be of the delay.
// Both protocols' members run with a session timeout of 10s and
// heartbeat every 250ms (rebalanceSession, rebalanceHeartbeat): the
// classic members ask for them in JoinGroup, the KIP-848 ones are told
// them by the broker (group.consumer.session.timeout.ms,
// group.consumer.heartbeat.interval.ms). The log line of each run counts
// the callbacks kgo made, empty ones included (a classic member's
// cooperative rebalance calls both, with nothing, when it keeps what it
// had): how many rounds each protocol took.
//
// Run it with make bench-rebalance (-benchtime 1x, as each run is a
// whole group's life, -count=$(COUNT), benchstat by protocol), or small:
//
//	PURGATORY_REBALANCE_MEMBERS=3 go test -run '^$' -bench BenchmarkGroupRebalance -benchtime 1x -v ./test
//
// With PURGATORY_REBALANCE_CPUPROFILE set to a path, each run also takes
// CPU profiles of the broker process (its /debug/pprof/profile, on
// --metrics.listener) over the two waits, in one-second pieces, the
// last ending up to a second after them: rebalance.pprof gives
// rebalance-consumer-0.pprof, rebalance-consumer-1.pprof and so on,
// which go tool pprof merges when given them all.
func BenchmarkGroupRebalance(b *testing.B) {
	members := 100
	if s := os.Getenv("PURGATORY_REBALANCE_MEMBERS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(b, err, "PURGATORY_REBALANCE_MEMBERS")
		require.Positive(b, n, "PURGATORY_REBALANCE_MEMBERS")
		members = n
	}
	for _, protocol := range []string{"classic", "consumer"} {
		b.Run("protocol="+protocol, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				r := rebalanceRun(b, protocol, members)
				b.ReportMetric(float64(r.all.took.Milliseconds()), "rebalance-ms")
				b.ReportMetric(float64(r.all.assigned.Milliseconds()), "assigned-ms")
				b.ReportMetric(float64(r.all.cpu.Milliseconds()), "rebalance-broker-cpu-ms")
				b.ReportMetric(float64(r.one.took.Milliseconds()), "join-ms")
				b.ReportMetric(float64(r.one.assigned.Milliseconds()), "join-assigned-ms")
				b.ReportMetric(float64(r.one.cpu.Milliseconds()), "join-broker-cpu-ms")
				b.Logf("%s, %d members: settled after %v (callbacks done after %v, broker CPU %v, %s); member %d settled after %v (callbacks done after %v, broker CPU %v, %s)",
					protocol, members, r.all.took, r.all.assigned, r.all.cpu, r.all.callbacks,
					members+1, r.one.took, r.one.assigned, r.one.cpu, r.one.callbacks)
			}
		})
	}
}

// rebalanceResult is what rebalanceRun measured.
type rebalanceResult struct {
	all, one settleTimes // the members joining together; one more joining
}

// settleTimes is one rebalance's measure: from its first member's start
// until the group was seen settled (took) and until the callbacks last
// changed (assigned), the broker's CPU time over took, and what the
// callbacks did.
type settleTimes struct {
	took, assigned, cpu time.Duration
	callbacks           string
}

// rebalanceRun starts a broker and a topic of 2*members partitions, then
// members members of one group together, waits until they settle, then
// one more, and waits again; the clock runs over the two waits. The
// members leave when it returns.
func rebalanceRun(b *testing.B, protocol string, members int) rebalanceResult {
	const topic, group = "rebalance", "rebalance"
	partitions := 2 * members
	args := []string{"--group.initial.rebalance.delay.ms", "0",
		"--group.consumer.session.timeout.ms", strconv.FormatInt(rebalanceSession.Milliseconds(), 10),
		"--group.consumer.heartbeat.interval.ms", strconv.FormatInt(rebalanceHeartbeat.Milliseconds(), 10)}
	profile := os.Getenv("PURGATORY_REBALANCE_CPUPROFILE")
	if profile != "" {
		args = append(args, "--metrics.listener", "127.0.0.1:0")
	}
	p := startBrokerProcess(b, limits{}, args...)
	admin, err := kgo.NewClient(kgo.SeedBrokers(p.addr), kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelWarn, nil)))
	require.NoError(b, err)
	defer admin.Close()
	createTopic(b, admin, topic, int32(partitions))

	own := newOwnership()
	var cls []*kgo.Client
	defer func() {
		// Leave together: one by one, each classic leave would be a
		// rebalance of those still there, paced by their heartbeats.
		var wg sync.WaitGroup
		for _, cl := range cls {
			wg.Go(cl.Close)
		}
		wg.Wait()
	}()
	join := func(n int) {
		for range n {
			// Named by their place: own counts by name.
			cls = append(cls, rebalanceMember(b, p.addr, protocol, group, topic, fmt.Sprintf("m%d", len(cls)), own))
		}
	}
	measure := func(n int) settleTimes {
		cpu := p.cpu()
		from := own.snapshot()
		start := time.Now()
		b.StartTimer()
		join(n)
		settled, assigned := waitSettled(b, admin, protocol, group, own, len(cls), partitions)
		b.StopTimer()
		return settleTimes{took: settled.Sub(start), assigned: assigned.Sub(start), cpu: p.cpu() - cpu,
			callbacks: own.snapshot().since(from)}
	}
	var r rebalanceResult
	stop := startCPUProfile(b, p, profile, protocol)
	r.all = measure(members)
	r.one = measure(1)
	stop()
	return r
}

// startCPUProfile starts a CPU profile of the broker p if path is set (p
// runs with --metrics.listener), and returns the function that ends it
// and writes it. The profile endpoint takes its length up front, so it
// is asked for in one-second pieces until stopped, each written to path
// with the protocol's name and the piece's number before the extension.
func startCPUProfile(b *testing.B, p *brokerProcess, path, protocol string) (stop func()) {
	if path == "" {
		return func() {}
	}
	ext := filepath.Ext(path)
	base := strings.TrimSuffix(path, ext) + "-" + protocol
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for i := 0; ; i++ {
			resp, err := http.Get("http://" + p.metricsAddr + "/debug/pprof/profile?seconds=1")
			if err != nil {
				b.Errorf("cpu profile: %v", err)
				return
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil {
				err = os.WriteFile(fmt.Sprintf("%s-%d%s", base, i, ext), body, 0o644)
			}
			if err != nil {
				b.Errorf("cpu profile: %v", err)
				return
			}
			select {
			case <-done:
				return
			default:
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// rebalanceMember starts a member of group consuming topic on protocol
// ("classic" or "consumer") whose callbacks keep own. It never polls: the
// topic is empty, and kgo runs its group (joins, heartbeats, callbacks)
// on its own goroutines.
func rebalanceMember(b *testing.B, addr, protocol, group, topic, name string, own *ownership) *kgo.Client {
	opts := []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelWarn, func() string { return name + ": " })),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.SessionTimeout(rebalanceSession), kgo.HeartbeatInterval(rebalanceHeartbeat),
		kgo.RebalanceTimeout(rebalanceTimeout),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			own.change(name, m[topic], assignedCall)
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			own.change(name, m[topic], revokedCall)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			own.change(name, m[topic], lostCall)
		}),
	}
	if protocol == "consumer" {
		// With the default balancer, cooperative-sticky, this asks
		// the broker for its "uniform" assignor.
		opts = append(opts, kgo.ServerSideBalancer())
	}
	cl, err := kgo.NewClient(opts...)
	require.NoError(b, err)
	return cl
}

// waitSettled waits until own shows the group's partitions owned once
// each and shared evenly among members members, and the group describes
// itself as Stable with members members while own stays as it was. It
// returns when it saw that, and when own last changed.
func waitSettled(b *testing.B, admin *kgo.Client, protocol, group string, own *ownership, members, partitions int) (settled, assigned time.Time) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(rebalanceDeadline)
	for {
		select {
		case <-deadline:
			b.Fatalf("%d %s members not settled on %d partitions after %v: %s", members, protocol, partitions, rebalanceDeadline, own.snapshot())
		case <-tick.C:
		}
		before := own.snapshot()
		if !before.even(members, partitions) || !describedStable(b, admin, protocol, group, members) {
			continue
		}
		if after := own.snapshot(); after.changes == before.changes {
			return time.Now(), before.changed
		}
	}
}

// describedStable reports whether the group describes itself as Stable
// with members members: DescribeGroups for a classic group,
// ConsumerGroupDescribe for a KIP-848 one (Stable there is every member
// at the target assignment's epoch, the target at the group's).
func describedStable(b *testing.B, admin *kgo.Client, protocol, group string, members int) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if protocol == "consumer" {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{group}
		resp, err := req.RequestWith(ctx, admin)
		require.NoError(b, err)
		require.Len(b, resp.Groups, 1)
		g := resp.Groups[0]
		return g.ErrorCode == 0 && g.State == "Stable" && len(g.Members) == members
	}
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, admin)
	require.NoError(b, err)
	require.Len(b, resp.Groups, 1)
	g := resp.Groups[0]
	return g.ErrorCode == 0 && g.State == "Stable" && len(g.Members) == members
}

// ownership is what the members' callbacks said they own. The callbacks
// run on the members' group goroutines, the waits on the benchmark's.
type ownership struct {
	mu  sync.Mutex // guards the following
	now holdings
}

// holdings is what the callbacks said up to one moment.
type holdings struct {
	// For each partition, how many members own it; for each member,
	// how many partitions it owns.
	owners map[int32]int
	owned  map[string]int
	// How many callbacks changed anything, and when the last did.
	changes int
	changed time.Time
	// Callbacks run, by kind.
	calls [3]int
}

// A callback's kind, holdings.calls's index.
const (
	assignedCall = iota
	revokedCall
	lostCall
)

func newOwnership() *ownership {
	return &ownership{now: holdings{owners: make(map[int32]int), owned: make(map[string]int)}}
}

// change records a callback of kind for member's partitions ps: an
// assignment adds them to what it owns, a revocation or a loss takes
// them away.
func (o *ownership) change(member string, ps []int32, kind int) {
	sign := 1
	if kind != assignedCall {
		sign = -1
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.now.calls[kind]++
	if len(ps) == 0 {
		return
	}
	for _, p := range ps {
		o.now.owners[p] += sign
	}
	o.now.owned[member] += sign * len(ps)
	o.now.changes++
	o.now.changed = time.Now()
}

// snapshot returns a copy of what o holds now. O(partitions + members).
func (o *ownership) snapshot() holdings {
	o.mu.Lock()
	defer o.mu.Unlock()
	h := o.now
	h.owners, h.owned = maps.Clone(h.owners), maps.Clone(h.owned)
	return h
}

// even reports whether the partitions 0 to partitions-1 are owned by
// exactly one member each, and members members own them, each at least
// one and none more than one more than another.
func (h holdings) even(members, partitions int) bool {
	for p := range int32(partitions) {
		if h.owners[p] != 1 {
			return false
		}
	}
	least, most, owning := partitions, 0, 0
	for _, n := range h.owned {
		if n > 0 {
			owning++
			least, most = min(least, n), max(most, n)
		}
	}
	return owning == members && most-least <= 1
}

// since says what the callbacks did after from.
func (h holdings) since(from holdings) string {
	return fmt.Sprintf("%d assigned, %d revoked, %d lost callbacks",
		h.calls[assignedCall]-from.calls[assignedCall], h.calls[revokedCall]-from.calls[revokedCall], h.calls[lostCall]-from.calls[lostCall])
}

// String says how many partitions are owned once, and by how many
// members, for a group that never settled.
func (h holdings) String() string {
	once, owning := 0, 0
	for _, n := range h.owners {
		if n == 1 {
			once++
		}
	}
	for _, n := range h.owned {
		if n > 0 {
			owning++
		}
	}
	return fmt.Sprintf("%d partitions owned once, by %d members; %s", once, owning, h.since(holdings{}))
}
