#!/usr/bin/env bash
# Runs franz-go's own kgo integration suite against the example broker.
#
#   scripts/kgo-integration.sh                # the whole suite
#   RUN=TestGroupETL scripts/kgo-integration.sh
#   make kgo-integration RUN='TestConsumeRegex|TestIssue337'
#   CLUSTER=1 scripts/kgo-integration.sh      # against three brokers, replication factor 3
#   PROXY=1 scripts/kgo-integration.sh        # through examples/proxy in front of the broker
#
# It builds the broker, starts it on a free loopback port (the kernel picks
# it: the broker listens on 127.0.0.1:0 and logs the address it got, which
# it also advertises), waits until it accepts connections, runs
# `go test github.com/twmb/franz-go/pkg/kgo` against it from inside this
# module (so the suite builds with this module's franz-go version, v1.22.2
# in go.mod), stops the broker and exits with the tests' status. The
# broker is stopped on every exit path, Ctrl-C included.
#
# Environment:
#   GO            the go command (default: go)
#   RUN           a -run pattern passed through to go test (default: all);
#                 name TestGroupETL whole, not one of its subtests: the
#                 suite's ETL semaphore is released only by subtests that
#                 run, so RUN='TestGroupETL/848' waits out its timeout
#   TIMEOUT       go test -timeout (default: 5m, as franz-go's own CI; the
#                 suite takes about a minute here)
#   TESTFLAGS     more go test flags, e.g. "-v" or "-race"
#   BROKER_RACE=1 build the broker (and the proxy) with -race; a race
#                 report fails the run
#   KGO_TEST_RECORDS  records per ETL chain (the suite's default: 500000)
#   KGO_LOG_LEVEL     the suite's client log level (info, debug, none)
#   BROKER_EXTRA_FLAGS  more flags for the brokers with CLUSTER=1, e.g.
#                 "--transaction.version 1"
#   BROKER_LOG_LEVEL  the broker's --log.level (default: info; the address
#                 is read from its info line "broker serving")
#   KEEP_LOGS=1   keep the broker's log even when the suite passes
#   CLUSTER=1     run the suite against a three-broker cluster started by
#                 scripts/cluster.sh on three free consecutive ports, with
#                 KGO_TEST_RF=3 (every topic on every broker) and
#                 min.insync.replicas 2; each broker's SCRAM listener
#                 (SASL_PLAINTEXT, ADD_SCRAM of scripts/cluster.sh) is on
#                 its port + 2000, and the suite starts once every broker
#                 holds the user kgo
#   PROXY=1       run the suite through the example proxy: it is started
#                 on a free loopback port in front of the broker (or the
#                 cluster, with CLUSTER=1), and KGO_SEEDS is the proxy's
#                 address alone; the suite's clients never see a broker.
#                 The proxy's log is checked as the broker's is
#                 (PROXY_LOG_LEVEL, default info).
#
# The broker's settings for the suite:
#   --group.initial.rebalance.delay.ms 0
#       Kafka's 3s default holds each new group's first rebalance for 3s,
#       which only lengthens the group tests (TestGroupETL alone: 18-20s
#       instead of 10-18s); 0 is what Kafka's shipped
#       config/server.properties sets "for development and testing". The
#       suite also passes with 3s.
#   --num.partitions 1, --auto.create.topics.enable true
#       Kafka's defaults, stated so that a changed broker default does not
#       change the run. The suite creates its topics itself (it also
#       passes with auto-creation off).
#   default.replication.factor stays 1 and the suite runs with
#   KGO_TEST_RF=1: the broker is a single node.
#
# No test is excluded (the bar: every test that needs no ACLs passes;
# TestTxnEtl, which needs transactions, runs; the KIP-848 tests run:
# Test848RegexBrokerResolves and the /848 subtests of TestGroupETL,
# TestGroupSimple and TestTxnEtl, whose consumers use
# kgo.ServerSideBalancer against the broker's ConsumerGroupHeartbeat v1;
# the share-group tests run: TestShareGroup*, and
# TestConsumeRegexShareSkipsInternal, against the broker's ShareFetch and
# ShareAcknowledge v2, and pass against one broker and, with CLUSTER=1,
# against three (a group's configs, share.auto.offset.reset earliest, are
# in the metadata log, which the partitions' leaders read; with PROXY=1
# they run through the proxy, which forwards the IncrementalAlterConfigs
# that sets a group's config):
#   make kgo-integration RUN='TestShareGroup|TestConsumeRegexShareSkipsInternal'
# TestSCRAMAuth and TestSCRAMAuthBadCredentials run in every mode
# (KGO_TEST_SCRAM_SEEDS, KGO_TEST_SCRAM kgo:kgo-secret:512): against one
# broker, its second listener, SCRAM (SASL_PLAINTEXT), with the user kgo
# made by --add-scram; with CLUSTER=1, against the three brokers' SCRAM
# listeners, the user committed once by the active controller, each
# broker answering Metadata with every broker's SCRAM endpoint; with
# PROXY=1, against a second proxy whose listener is SASL_PLAINTEXT (its
# users file). No test skips itself for lack of a broker feature.
set -euo pipefail

GO=${GO:-go}
RUN=${RUN:-}
TIMEOUT=${TIMEOUT:-5m}
TESTFLAGS=${TESTFLAGS:-}
BROKER_LOG_LEVEL=${BROKER_LOG_LEVEL:-info}
case "$BROKER_LOG_LEVEL" in
info | debug) ;;
*)
	echo "kgo-integration: BROKER_LOG_LEVEL must be info or debug: the broker's address is read from an info line" >&2
	exit 2
	;;
esac

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

# Job control puts the broker and go test each in a process group of its
# own, so that stopping go test also stops the test binary it runs, and so
# that a Ctrl-C reaches this script, which then stops both.
set -m

work=$(mktemp -d "${TMPDIR:-/tmp}/kgo-integration.XXXXXX")
broker_log="$work/broker.log"
broker_pid=""
proxy_pid=""
test_pid=""
scram_addr=""
scram_proxy_pid=""
status=1

# stop_broker sends SIGTERM (the broker shuts down gracefully: it answers
# what waits in its purgatories and writes what it owes), waits up to 15s,
# then SIGKILLs. It only ever signals the process this script started.
stop_broker() {
	[[ -n "$broker_pid" ]] || return 0
	if kill -0 "$broker_pid" 2>/dev/null; then
		kill -TERM "$broker_pid" 2>/dev/null || true
		for _ in $(seq 150); do
			kill -0 "$broker_pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$broker_pid" 2>/dev/null; then
			echo "kgo-integration: broker did not stop in 15s; killing it" >&2
			kill -KILL "$broker_pid" 2>/dev/null || true
		fi
	fi
	wait "$broker_pid" 2>/dev/null || true
	broker_pid=""
}

# stop_proxy stops the proxy as stop_broker stops the broker: SIGTERM, a
# graceful shutdown that answers what waits in its purgatory, then SIGKILL
# after 15s.
stop_proxy() {
	[[ -n "$proxy_pid" ]] || return 0
	if kill -0 "$proxy_pid" 2>/dev/null; then
		kill -TERM "$proxy_pid" 2>/dev/null || true
		for _ in $(seq 150); do
			kill -0 "$proxy_pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$proxy_pid" 2>/dev/null; then
			echo "kgo-integration: proxy did not stop in 15s; killing it" >&2
			kill -KILL "$proxy_pid" 2>/dev/null || true
		fi
	fi
	wait "$proxy_pid" 2>/dev/null || true
	proxy_pid=""
}

# stop_tests stops go test and the test binary: their process group.
stop_tests() {
	[[ -n "$test_pid" ]] || return 0
	kill -TERM -- -"$test_pid" 2>/dev/null || true
	wait "$test_pid" 2>/dev/null || true
	test_pid=""
}

cleanup() {
	stop_tests
	if [[ -n "$scram_proxy_pid" ]]; then
		kill -TERM "$scram_proxy_pid" 2>/dev/null || true
		wait "$scram_proxy_pid" 2>/dev/null || true
	fi
	stop_proxy
	stop_broker
	if [[ $status -ne 0 || -n "${KEEP_LOGS:-}" ]]; then
		echo "kgo-integration: broker logs kept in $work" >&2
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The user of TestSCRAMAuth (KGO_TEST_SCRAM below), made at start on the
# broker's SCRAM listener, or on the cluster's: every broker is given it,
# and the active controller commits it once.
add_scram="SCRAM-SHA-256=[name=kgo,password=kgo-secret];SCRAM-SHA-512=[name=kgo,password=kgo-secret]"

# accepts reports whether something listens on host:port.
accepts() { (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null; }

if [[ -n "${CLUSTER:-}" ]]; then
	# Three free consecutive ports, the metadata quorum's three at +1000
	# and the SCRAM listeners' three at +2000 (scripts/cluster.sh):
	# nothing accepts on them now. All below Linux's ephemeral range
	# (32768 and up), so that no client connection of an earlier run can
	# hold one of them.
	base=""
	for _ in $(seq 100); do
		b=$((20000 + RANDOM % 10000))
		free=1
		for p in $b $((b + 1)) $((b + 2)) $((b + 1000)) $((b + 1001)) $((b + 1002)) $((b + 2000)) $((b + 2001)) $((b + 2002)); do
			if accepts "127.0.0.1:$p"; then free=""; fi
		done
		if [[ -n "$free" ]]; then
			base=$b
			break
		fi
	done
	[[ -n "$base" ]] || { echo "kgo-integration: no three free ports" >&2; exit 1; }
	echo "kgo-integration: starting a three-broker cluster on ports $base-$((base + 2))"
	GO="$GO" BASE_PORT=$base LOGS="$work" BUILD_FLAGS="${BROKER_RACE:+-race}" ADD_SCRAM="$add_scram" \
		EXTRA_FLAGS="--default.replication.factor 3 --min.insync.replicas 2 --group.initial.rebalance.delay.ms 0 --num.partitions 1 --log.level $BROKER_LOG_LEVEL ${BROKER_EXTRA_FLAGS:-}" \
		./scripts/cluster.sh >"$work/cluster.out" 2>&1 &
	broker_pid=$! # the script: stopping it stops the three
	addrs=("127.0.0.1:$base" "127.0.0.1:$((base + 1))" "127.0.0.1:$((base + 2))")
	scram_addr="127.0.0.1:$((base + 2000)),127.0.0.1:$((base + 2001)),127.0.0.1:$((base + 2002))"
	rf=3
else
	echo "kgo-integration: building the broker"
	build=()
	if [[ -n "${BROKER_RACE:-}" ]]; then
		build+=(-race)
	fi
	"$GO" build "${build[@]}" -o "$work/broker" ./examples/broker

	"$work/broker" \
		--listeners PLAINTEXT://127.0.0.1:0,SCRAM://127.0.0.1:0 \
		--listener.security.protocol.map SCRAM:SASL_PLAINTEXT \
		--add-scram "$add_scram" \
		--group.initial.rebalance.delay.ms 0 \
		--num.partitions 1 \
		--auto.create.topics.enable true \
		--log.level "$BROKER_LOG_LEVEL" \
		>"$broker_log" 2>&1 &
	broker_pid=$!
	addr=""
	for _ in $(seq 300); do
		addr=$(grep -o '"listener": "[^"]*", "name": "PLAINTEXT"' "$broker_log" | head -n1 | cut -d'"' -f4 || true)
		scram_addr=$(grep -o '"listener": "[^"]*", "name": "SCRAM"' "$broker_log" | head -n1 | cut -d'"' -f4 || true)
		[[ -z "$addr" || -z "$scram_addr" ]] || break
		kill -0 "$broker_pid" 2>/dev/null || break
		sleep 0.1
	done
	addrs=("$addr")
	rf=1
fi

# Wait until every broker accepts connections (the cluster's build included).
for a in "${addrs[@]}"; do
	for _ in $(seq 1200); do
		if ! kill -0 "$broker_pid" 2>/dev/null; then
			echo "kgo-integration: the broker exited at startup:" >&2
			cat "$work"/*.log "$work"/cluster.out 2>/dev/null >&2
			exit 1
		fi
		if [[ -n "$a" ]] && accepts "$a"; then
			continue 2
		fi
		sleep 0.1
	done
	echo "kgo-integration: the broker did not accept connections in 120s:" >&2
	cat "$work"/*.log "$work"/cluster.out 2>/dev/null >&2
	exit 1
done
seeds=$(IFS=,; echo "${addrs[*]}")
echo "kgo-integration: broker $broker_pid serving on $seeds"

# The credentials are committed once the metadata quorum has its active
# controller, and applied by each broker a moment later: a SCRAM test that
# ran before would fail to authenticate. Each broker logs when it holds
# them.
scram_logs=("$broker_log")
if [[ -n "${CLUSTER:-}" ]]; then
	scram_logs=("$work/broker-1.log" "$work/broker-2.log" "$work/broker-3.log")
fi
for l in "${scram_logs[@]}"; do
	for _ in $(seq 600); do
		if grep -q 'add-scram: credentials in the metadata log' "$l" 2>/dev/null; then
			continue 2
		fi
		kill -0 "$broker_pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "kgo-integration: $(basename "$l" .log) does not hold the SCRAM credentials after 60s:" >&2
	cat "$work"/*.log "$work"/cluster.out 2>/dev/null >&2
	exit 1
done
echo "kgo-integration: every broker holds the user kgo (SCRAM listeners: $scram_addr)"

if [[ -n "${PROXY:-}" ]]; then
	echo "kgo-integration: building the proxy"
	proxy_build=()
	if [[ -n "${BROKER_RACE:-}" ]]; then
		proxy_build+=(-race)
	fi
	"$GO" build "${proxy_build[@]+"${proxy_build[@]}"}" -o "$work/proxy" ./examples/proxy
	proxy_log="$work/proxy.log"
	"$work/proxy" \
		--upstream "$seeds" \
		--listeners 127.0.0.1:0 \
		--log.level "${PROXY_LOG_LEVEL:-info}" \
		>"$proxy_log" 2>&1 &
	proxy_pid=$!
	paddr=""
	for _ in $(seq 300); do
		paddr=$(grep -o '"listener": "[^"]*"' "$proxy_log" | head -n1 | cut -d'"' -f4 || true)
		[[ -z "$paddr" ]] || break
		kill -0 "$proxy_pid" 2>/dev/null || break
		sleep 0.1
	done
	if [[ -z "$paddr" ]] || ! accepts "$paddr"; then
		echo "kgo-integration: the proxy did not start:" >&2
		cat "$proxy_log" >&2
		exit 1
	fi
	seeds=$paddr
	echo "kgo-integration: proxy $proxy_pid serving on $seeds"

	# A second proxy, its listener SASL_PLAINTEXT, for the SCRAM tests:
	# the proxy authenticates its clients itself (the user kgo of its
	# users file), whatever upstream asks.
	printf 'kgo=kgo-secret\n' >"$work/proxy-users"
	"$work/proxy" \
		--upstream "$(IFS=,; echo "${addrs[*]}")" \
		--listeners SASL_PLAINTEXT://127.0.0.1:0 \
		--sasl.users.file "$work/proxy-users" \
		--log.level "${PROXY_LOG_LEVEL:-info}" \
		>"$work/proxy-scram.log" 2>&1 &
	scram_proxy_pid=$!
	scram_addr=""
	for _ in $(seq 300); do
		scram_addr=$(grep -o '"listener": "[^"]*"' "$work/proxy-scram.log" | head -n1 | cut -d'"' -f4 || true)
		[[ -z "$scram_addr" ]] || break
		sleep 0.1
	done
	echo "kgo-integration: the SCRAM tests run through the SCRAM proxy $scram_proxy_pid on $scram_addr"
fi

args=(-count=1 -timeout "$TIMEOUT")
if [[ -n "$RUN" ]]; then
	args+=(-run "$RUN")
fi
# TESTFLAGS is split on spaces on purpose: it holds flags.
# shellcheck disable=SC2206
args+=($TESTFLAGS)

# go test runs in the background so that a signal interrupts the wait
# and the traps stop everything; its status is the script's.
start=$SECONDS
scram=()
if [[ -n "$scram_addr" ]]; then
	# TestSCRAMAuth and TestSCRAMAuthBadCredentials, against the
	# brokers' SASL_PLAINTEXT listeners (or the SCRAM proxy's), as kgo
	# (its credentials made at start by --add-scram) and as a user who
	# does not exist.
	scram=(KGO_TEST_SCRAM_SEEDS="$scram_addr" KGO_TEST_SCRAM="kgo:kgo-secret:512")
fi
env "${scram[@]+"${scram[@]}"}" KGO_SEEDS="$seeds" KGO_TEST_RF=$rf "$GO" test "${args[@]}" github.com/twmb/franz-go/pkg/kgo &
test_pid=$!
set +e
wait "$test_pid"
status=$?
set -e
test_pid=""
echo "kgo-integration: go test exited $status after $((SECONDS - start))s"

if ! kill -0 "$broker_pid" 2>/dev/null; then
	echo "kgo-integration: the broker died during the run" >&2
	status=1
fi
if [[ -n "$proxy_pid" ]] && ! kill -0 "$proxy_pid" 2>/dev/null; then
	echo "kgo-integration: the proxy died during the run" >&2
	status=1
fi
# A panicking handler closes only its connection, and the client may well
# retry past it; the suite would pass over a broker bug. Fail instead.
logs=("$work"/broker*.log)
if [[ -n "${PROXY:-}" ]]; then
	logs+=("$work/proxy.log" "$work/proxy-scram.log")
fi
if grep -q 'handler panicked' "${logs[@]}"; then
	echo "kgo-integration: a broker handler panicked:" >&2
	grep -A3 'handler panicked' "${logs[@]}" >&2
	status=1
fi
if grep -q 'WARNING: DATA RACE' "${logs[@]}"; then
	echo "kgo-integration: the race detector found a race in the broker; see its log" >&2
	status=1
fi
exit "$status"
