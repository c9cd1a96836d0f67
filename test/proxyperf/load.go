package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// phase is what one phase measured.
type phase struct {
	Name string `json:"name"`

	BrokerCPUCores        float64 `json:"broker_cpu_cores"` // CPU seconds / measured seconds
	UpstreamFetchesPerSec float64 `json:"upstream_fetches_per_sec"`
	ClientFetchesPerSec   float64 `json:"client_fetches_per_sec"`

	Produced  int64       `json:"produced"`  // records produced in the window
	Delivered float64     `json:"delivered"` // received / (produced x consumers)
	Latency   percentiles `json:"latency"`   // produce to receipt, ms

	// ProxyOwn is the proxy's own latency (its
	// proxy_upstream_to_client_seconds, in the window): from an upstream
	// answer's arrival to the write of each client fetch it woke, ms.
	ProxyOwn percentiles `json:"proxy_own_latency"`

	ProxyCPUCores   float64 `json:"proxy_cpu_cores,omitempty"`
	ProxyRSSMiB     float64 `json:"proxy_rss_mib,omitempty"`
	ProxyPeakRSSMiB float64 `json:"proxy_peak_rss_mib,omitempty"`
}

// window is the measured span, fixed before the load starts: the records
// produced in it count, on both sides, whenever they are acknowledged or
// received.
type window struct{ start, end int64 }

func (w window) in(t int64) bool { return t >= w.start && t < w.end }

// runPhase starts a broker (and a proxy in front of it), runs the load,
// measures, and stops them.
func runPhase(ctx context.Context, cfg config, bins binaries, viaProxy bool, log io.Writer) (phase, error) {
	name := phaseName(viaProxy)
	ph := phase{Name: name}
	fmt.Fprintf(log, "proxyperf: %s: starting\n", name)
	broker, err := start(ctx, "broker", cfg.serverCPUs, bins.broker, "--group.initial.rebalance.delay.ms", "0")
	if err != nil {
		return ph, err
	}
	defer broker.stop()
	seeds := broker.addr
	var proxy *child
	if viaProxy {
		proxy, err = start(ctx, "proxy", cfg.serverCPUs, bins.proxy, "--upstream", broker.addr,
			"--tail.fetch.max.wait.ms", fmt.Sprint(cfg.tailMaxWait.Milliseconds()))
		if err != nil {
			return ph, err
		}
		defer proxy.stop()
		seeds = proxy.addr
	}
	topic := "perf-" + name
	if err := createTopic(ctx, broker.addr, topic, cfg.partitions); err != nil {
		return ph, err
	}

	// The consumers, each a client of every partition from its end.
	begin := time.Now()
	w := window{start: begin.Add(cfg.warmup).UnixNano(), end: begin.Add(cfg.warmup + cfg.duration).UnixNano()}
	lat := make([][]float64, cfg.consumers)
	received := make([]int64, cfg.consumers)
	cctx, stopConsumers := context.WithCancel(ctx)
	var consumers sync.WaitGroup
	var clients []*kgo.Client
	defer func() {
		stopConsumers()
		consumers.Wait()
		for _, cl := range clients {
			cl.Close()
		}
	}()
	for i := range cfg.consumers {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.FetchMaxWait(cfg.fetchMaxWait))
		if err != nil {
			return ph, err
		}
		clients = append(clients, cl)
		consumers.Add(1)
		go func() {
			defer consumers.Done()
			for cctx.Err() == nil {
				fs := cl.PollFetches(cctx)
				now := time.Now().UnixNano()
				fs.EachRecord(func(r *kgo.Record) {
					if len(r.Value) < 8 {
						return
					}
					sent := int64(binary.BigEndian.Uint64(r.Value))
					if w.in(sent) {
						lat[i] = append(lat[i], float64(now-sent)/1e6)
						received[i]++
					}
				})
			}
		}()
	}

	// The producer, straight to the broker in both phases, paced evenly.
	producer, err := kgo.NewClient(kgo.SeedBrokers(broker.addr), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		return ph, err
	}
	defer producer.Close()
	pctx, stopProducer := context.WithCancel(ctx)
	var produced atomic.Int64
	var produceErr atomic.Value
	done := make(chan struct{})
	go func() {
		defer close(done)
		gap := time.Duration(float64(time.Second) / cfg.rate)
		for i := 0; pctx.Err() == nil; i++ {
			if d := time.Until(begin.Add(time.Duration(i) * gap)); d > 0 {
				time.Sleep(d)
			}
			v := make([]byte, cfg.size)
			now := time.Now().UnixNano()
			binary.BigEndian.PutUint64(v, uint64(now))
			producer.Produce(pctx, &kgo.Record{Partition: int32(i % cfg.partitions), Value: v}, func(_ *kgo.Record, err error) {
				if err != nil && pctx.Err() == nil {
					produceErr.Store(err)
				}
				if err == nil && w.in(now) {
					produced.Add(1)
				}
			})
		}
	}()

	select {
	case <-time.After(time.Until(time.Unix(0, w.start))):
	case <-ctx.Done():
		stopProducer()
		<-done
		return ph, ctx.Err()
	}
	type snapshot struct {
		at                   time.Time
		brokerCPU, proxyCPU  time.Duration
		upFetches, clFetches float64
		own                  []bucket // proxy_upstream_to_client_seconds
	}
	take := func() (snapshot, error) {
		s := snapshot{at: time.Now()}
		var err error
		if s.brokerCPU, err = cpuOf(broker.cmd.Process.Pid); err != nil {
			return s, err
		}
		text, err := broker.scrape()
		if err != nil {
			return s, err
		}
		s.upFetches = counter(text, "broker_requests_total", `api="Fetch"`)
		s.clFetches = s.upFetches
		if proxy != nil {
			if s.proxyCPU, err = cpuOf(proxy.cmd.Process.Pid); err != nil {
				return s, err
			}
			ptext, err := proxy.scrape()
			if err != nil {
				return s, err
			}
			s.clFetches = counter(ptext, "proxy_requests_total", `api="Fetch"`)
			s.own = histogram(ptext, "proxy_upstream_to_client_seconds")
		}
		return s, nil
	}
	before, err := take()
	if err != nil {
		stopProducer()
		<-done
		return ph, err
	}
	fmt.Fprintf(log, "proxyperf: %s: measuring for %v\n", name, cfg.duration)
	select {
	case <-time.After(time.Until(time.Unix(0, w.end))):
	case <-ctx.Done():
	}
	after, err := take()
	if err != nil || ctx.Err() != nil {
		stopProducer()
		<-done
		return ph, fmt.Errorf("%w%w", err, ctx.Err())
	}
	if proxy != nil {
		rss, peak, err := memOf(proxy.cmd.Process.Pid)
		if err != nil {
			stopProducer()
			<-done
			return ph, err
		}
		ph.ProxyRSSMiB, ph.ProxyPeakRSSMiB = float64(rss)/(1<<20), float64(peak)/(1<<20)
	}
	// The last records of the window are on their way: let them land.
	time.Sleep(cfg.fetchMaxWait + time.Second)
	stopProducer()
	<-done
	if err, _ := produceErr.Load().(error); err != nil {
		return ph, fmt.Errorf("produce: %w", err)
	}
	stopConsumers()
	consumers.Wait()

	secs := after.at.Sub(before.at).Seconds()
	ph.BrokerCPUCores = (after.brokerCPU - before.brokerCPU).Seconds() / secs
	ph.UpstreamFetchesPerSec = (after.upFetches - before.upFetches) / secs
	ph.ClientFetchesPerSec = (after.clFetches - before.clFetches) / secs
	if proxy != nil {
		ph.ProxyCPUCores = (after.proxyCPU - before.proxyCPU).Seconds() / secs
		own := since(after.own, before.own)
		ph.ProxyOwn = percentiles{P50: 1000 * quantile(own, 0.5), P90: 1000 * quantile(own, 0.9),
			P99: 1000 * quantile(own, 0.99), P999: 1000 * quantile(own, 0.999)}
		if len(own) > 0 {
			ph.ProxyOwn.Count = int(own[len(own)-1].count)
		}
	}
	ph.Produced = produced.Load()
	var all []float64
	var got int64
	for i := range lat {
		all = append(all, lat[i]...)
		got += received[i]
	}
	if ph.Produced > 0 {
		ph.Delivered = float64(got) / float64(ph.Produced*int64(cfg.consumers))
	}
	ph.Latency = percentilesOf(all)
	fmt.Fprintf(log, "proxyperf: %s: done\n", name)
	return ph, nil
}

// createTopic creates topic on the broker at addr.
func createTopic(ctx context.Context, addr, topic string, partitions int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, int32(partitions), 1
	req.Topics = []kmsg.CreateTopicsRequestTopic{rt}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	return nil
}
