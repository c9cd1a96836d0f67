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
	flags=(--node.id "$id" --cluster "$cluster")
	if [[ -n "${DATA:-}" ]]; then
		mkdir -p "$DATA/$id"
		flags+=(--log.dirs "$DATA/$id")
	fi
	# shellcheck disable=SC2086 # EXTRA_FLAGS is a list of flags
	"$bin" "${flags[@]}" $EXTRA_FLAGS >"$LOGS/broker-$id.log" 2>&1 &
	pids+=($!)
	echo "broker $id: 127.0.0.1:$((BASE_PORT + id - 1)), log $LOGS/broker-$id.log, pid $!"
done
echo "cluster $cluster is up; Ctrl-C stops it"
wait -n
echo "a broker stopped; stopping the others" >&2
