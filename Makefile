# Developer targets. CI runs .ci/run, which runs the README's test command.
#
# The exported API of the library packages (timer, operation, watchers,
# reaper, purgatory) is recorded in api/current.txt, and go test ./... fails
# (test/apicheck) when the code and the record differ: an exported change
# is made on purpose, by running "make api", and written in CHANGELOG.md
# under Unreleased. api/vX.Y.Z.txt is the record at the release vX.Y.Z.
GO ?= go
COUNT ?= 10
FUZZTIME ?= 60s
BENCHSTAT = $(GO) run golang.org/x/perf/cmd/benchstat@latest

.PHONY: test api api-report stress bench-timer bench-purgatory bench-newcomer bench-broker bench-cluster bench-proxy fuzz chaos bench-failover bench-rebalance bench-quota kgo-integration kgo-integration-cluster kgo-integration-proxy kafka-go cluster

test:
	$(GO) test -race ./...

# Regenerate api/current.txt from the library packages, then report what
# changed since the last release: against the newest api/vX.Y.Z.txt, and,
# when a v0.* tag is in the clone, apidiff's compatible/incompatible report
# between the tag and the working tree. Write what it reports in
# CHANGELOG.md under Unreleased.
api:
	GO='$(GO)' ./scripts/api.sh

# The same report without regenerating (CI runs it; apidiff runs only when
# the clone has a v0.* tag).
api-report:
	GO='$(GO)' ./scripts/api.sh report

# The exactly-once stress test at its full size: one million operations with
# concurrent completers, forcers, cancellers, expirations and purges, under -race.
stress:
	PURGATORY_STRESS_OPS=1000000 $(GO) test -race -run 'TestExactlyOnce' -count=1 -timeout 60m -v ./purgatory

# Wheel and time.AfterFunc side by side in one run; benchstat compares them.
bench-timer:
	$(GO) test -run '^$$' -bench . -count=$(COUNT) -timeout 3h ./timer | tee bench-timer.txt
	$(BENCHSTAT) -col /impl bench-timer.txt

bench-purgatory:
	$(GO) test -run '^$$' -bench . -count=$(COUNT) -timeout 3h ./purgatory ./watchers | tee bench-purgatory.txt
	$(BENCHSTAT) bench-purgatory.txt

# The three programs of issue 25's newcomer (a long-poll, a lease watchdog,
# a counter wait), each on the library and the naive way (a map of channels,
# time.AfterFunc) side by side: benchstat compares impl=purgatory with
# impl=naive (test/newcomer's package documentation says what an op is).
bench-newcomer:
	$(GO) test -run '^$$' -bench . -count=$(COUNT) ./test/newcomer | tee bench-newcomer.txt
	$(BENCHSTAT) -col /impl bench-newcomer.txt

# The example broker against franz-go's kfake, each in a child process of its
# own (a module of its own: kfake needs Go 1.26 and stays out of the library's).
bench-broker:
	cd test/kfakecmp && $(GO) test -run '^$$' -bench . -count=$(COUNT) -timeout 3h | tee ../../bench-broker.txt
	$(BENCHSTAT) -col /broker bench-broker.txt

# The chaos test for 5 minutes: a random broker of three killed -9 and
# restarted, or frozen and resumed, every few seconds under an acks=all load.
chaos:
	PURGATORY_CHAOS_DURATION=5m $(GO) test -run 'TestChaos' -count=1 -timeout 30m -v ./test

# Failover times (kill -9 of a partition leader to its first acks=all
# acknowledgement from the new leader), KILLS kills at each session setting.
KILLS ?= 20
bench-failover:
	PURGATORY_FAILOVER_KILLS=$(KILLS) $(GO) test -run '^$$' -bench 'BenchmarkFailover' -benchtime 1x -count=1 -timeout 2h -v ./test

# A consumer group's rebalance, the classic protocol against KIP-848's on
# the same broker binary in a child process, group.initial.rebalance.delay.ms
# 0: REBALANCE_MEMBERS members joining an empty group together, then one
# more joining the settled group, each timed until every partition is owned
# once, evenly, and the group is Stable; with the broker's CPU for each.
REBALANCE_MEMBERS ?= 100
bench-rebalance:
	PURGATORY_REBALANCE_MEMBERS=$(REBALANCE_MEMBERS) $(GO) test -run '^$$' -bench 'BenchmarkGroupRebalance' -benchtime 1x -count=$(COUNT) -timeout 2h ./test | tee bench-rebalance.txt
	$(BENCHSTAT) -col /protocol bench-rebalance.txt

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzWheelAgainstHeap -fuzztime $(FUZZTIME) ./timer
	$(GO) test -run '^$$' -fuzz FuzzDivider -fuzztime $(FUZZTIME) ./timer
	$(GO) test -run '^$$' -fuzz FuzzValidateBatch -fuzztime $(FUZZTIME) ./examples/broker/storage
	$(GO) test -run '^$$' -fuzz FuzzParseRecord -fuzztime $(FUZZTIME) ./examples/broker/storage
	$(GO) test -run '^$$' -fuzz FuzzWalkChunked -fuzztime $(FUZZTIME) ./examples/broker/storage
	$(GO) test -run '^$$' -fuzz FuzzDecodeBinding -fuzztime $(FUZZTIME) ./examples/internal/acl

# franz-go's kgo integration suite (the version in go.mod) against the example
# broker, on a free loopback port; RUN narrows it, as go test -run does:
#   make kgo-integration RUN=TestGroupETL
# scripts/kgo-integration.sh says what each mode runs (no test skips).
kgo-integration:
	GO='$(GO)' RUN='$(RUN)' ./scripts/kgo-integration.sh

# The same suite against a three-broker cluster, every topic on every broker.
kgo-integration-cluster:
	GO='$(GO)' RUN='$(RUN)' CLUSTER=1 ./scripts/kgo-integration.sh

# The same suite through examples/proxy in front of the broker: the
# suite's clients see only the proxy.
kgo-integration-proxy:
	GO='$(GO)' RUN='$(RUN)' PROXY=1 ./scripts/kgo-integration.sh

# segmentio/kafka-go's whole integration suite (but for the tests the
# script lists, with why) against one broker configured as kafka-go's CI
# configures Kafka 4.0; it needs ports 9092 and 9093 (scripts/kafka-go.sh).
kafka-go:
	GO='$(GO)' ./scripts/kafka-go.sh

# A local three-broker cluster (scripts/cluster.sh says how to change it).
cluster:
	GO='$(GO)' ./scripts/cluster.sh

# 100 consumers tailing a 12-partition topic, straight at the broker and then
# through examples/proxy, each in child processes of their own: broker CPU,
# fetches at the broker, end-to-end latency, proxy CPU and memory, and a plot.
# The broker and the proxy run on CPU 0, the clients on the others (as on
# machines of their own); drop --server-cpus to let them share every CPU.
bench-proxy:
	$(GO) run ./test/proxyperf --consumers 100 --partitions 12 --rate 1000 --warmup 5s --duration 30s --server-cpus 0 --plot bench-proxy.svg | tee bench-proxy.txt

# A producer limited to 1 MB/s by a client quota, its rate acknowledged over
# 30s after a warm-up of quota.window.num + 1 seconds (Kafka's 11 windows;
# QUOTA_WINDOWS=2 for a shorter cycle). Not in CI: it takes a minute.
QUOTA_WINDOWS ?= 11
bench-quota:
	PURGATORY_QUOTA_WINDOWS=$(QUOTA_WINDOWS) $(GO) test -run '^$$' -bench 'BenchmarkClientQuota' -benchtime 1x -count=1 -timeout 10m -v ./test

# acks=all produce on an in-process three-broker cluster, 1 and 12 partitions.
bench-cluster:
	$(GO) test -run '^$$' -bench BenchmarkCluster -count=$(COUNT) -timeout 1h ./test | tee bench-cluster.txt
	$(BENCHSTAT) bench-cluster.txt
