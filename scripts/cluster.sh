#!/usr/bin/env bash
# Starts a local three-broker cluster of the example broker, in one command:
#
#   scripts/cluster.sh            # or: make cluster
#   DATA=/tmp/cluster scripts/cluster.sh   # each broker keeps its log in $DATA/<id>
#
# Brokers 1, 2 and 3 listen on 127.0.0.1:9092, 9093 and 9094 (BASE_PORT
# moves them) and each is told the whole cluster with --cluster; each is a
# voter of the metadata quorum on its port + 1000 (10092, 10093, 10094),
# and the quorum's leader is the active controller. A kill -9 of any one
# broker moves its leaderships after broker.session.timeout.ms (9s).
# Topics get default.replication.factor
# 3 and min.insync.replicas 2 unless EXTRA_FLAGS says otherwise. Clients
# bootstrap from any of them:
#
#   kcat -b 127.0.0.1:9092 -L
#
# ADD_SCRAM gives each broker a second listener, SCRAM, whose protocol is
# SASL_PLAINTEXT, on its port + 2000 (11092, 11093, 11094), and the
# SCRAM credentials it lists, in kafka-storage format --add-scram's
# syntax:
#
#   ADD_SCRAM='SCRAM-SHA-512=[name=alice,password=alice-secret]' scripts/cluster.sh
#
# Every broker is given the same list; the active controller commits each
# credential once to the metadata log, and every broker authenticates
# with it once it has applied it (its log says "add-scram: credentials in
# the metadata log"). The brokers still speak PLAINTEXT between them, on
# their --cluster addresses; each registers both listeners, so a client
# of the SCRAM listener is told every broker at its SCRAM address.
#
# BUILD_FLAGS are passed to go build (e.g. -race).
# Each broker's log goes to $LOGS/broker-<id>.log (default: a temporary
# directory, printed). Ctrl-C (or SIGTERM to the script) stops the three
# gracefully; so does the end of any one.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
BASE_PORT=${BASE_PORT:-9092}
LOGS=${LOGS:-$(mktemp -d -t purgatory-cluster.XXXXXX)}
EXTRA_FLAGS=${EXTRA_FLAGS:---default.replication.factor 3 --min.insync.replicas 2}

bin="$LOGS/broker"
# shellcheck disable=SC2086 # BUILD_FLAGS is a list of flags, e.g. -race
"$GO" build ${BUILD_FLAGS:-} -o "$bin" ./examples/broker
cluster="1@127.0.0.1:$BASE_PORT,2@127.0.0.1:$((BASE_PORT + 1)),3@127.0.0.1:$((BASE_PORT + 2))"
pids=()
stop() {
	trap - INT TERM EXIT
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	wait
}
trap 'stop; exit 0' INT TERM
trap stop EXIT
for id in 1 2 3; do
	port=$((BASE_PORT + id - 1))
	flags=(--node.id "$id" --cluster "$cluster")
	if [[ -n "${ADD_SCRAM:-}" ]]; then
		flags+=(--listeners "PLAINTEXT://127.0.0.1:$port,SCRAM://127.0.0.1:$((port + 2000))"
			--listener.security.protocol.map SCRAM:SASL_PLAINTEXT
			--inter.broker.listener.name PLAINTEXT
			--add-scram "$ADD_SCRAM")
	fi
	if [[ -n "${DATA:-}" ]]; then
		mkdir -p "$DATA/$id"
		flags+=(--log.dirs "$DATA/$id")
	fi
	# shellcheck disable=SC2086 # EXTRA_FLAGS is a list of flags
	"$bin" "${flags[@]}" $EXTRA_FLAGS >"$LOGS/broker-$id.log" 2>&1 &
	pids+=($!)
	scram=""
	if [[ -n "${ADD_SCRAM:-}" ]]; then
		scram=", SCRAM 127.0.0.1:$((port + 2000))"
	fi
	echo "broker $id: 127.0.0.1:$port$scram, log $LOGS/broker-$id.log, pid $!"
done
echo "cluster $cluster is up; Ctrl-C stops it"
wait -n
echo "a broker stopped; stopping the others" >&2
