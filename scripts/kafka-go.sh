#!/usr/bin/env bash
# Runs segmentio/kafka-go's whole integration suite against the example
# broker, configured as kafka-go's CI configures Kafka 4.0
# (docker_compose_versions/docker-compose-400.yml):
#
#   scripts/kafka-go.sh          # make kafka-go
#   TESTFLAGS=-v scripts/kafka-go.sh
#
# kafka-go's tests dial localhost:9092 (PLAINTEXT) and localhost:9093
# (SASL_PLAINTEXT) and nothing else, so the broker takes those two ports
# on 127.0.0.1 (the script fails if either is taken). As in kafka-go's
# CI: an authorizer (StandardAuthorizer), allow.everyone.if.no.acl.found,
# the super users adminscram256, adminscram512 and adminplain, whose
# credentials --add-scram makes at start (PLAIN checks adminplain's
# password against its SCRAM credential), KAFKA_VERSION=4.0.0. The
# suite is test/kafkago's module's (it pins kafka-go v0.4.51): every
# package, about two minutes, every test but those listed in skip below,
# each with why. kafka-go skips four tests itself on Kafka 3.0 or later.
set -euo pipefail

GO=${GO:-go}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
set -m

accepts() { (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null; }
for p in 9092 9093; do
	if accepts "127.0.0.1:$p"; then
		echo "kafka-go: port $p is taken; kafka-go's tests need 9092 and 9093" >&2
		exit 1
	fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/kafka-go.XXXXXX")
broker_pid=""
status=1
cleanup() {
	if [[ -n "$broker_pid" ]]; then
		kill -TERM "$broker_pid" 2>/dev/null || true
		wait "$broker_pid" 2>/dev/null || true
	fi
	if [[ $status -ne 0 ]]; then
		echo "kafka-go: broker log kept in $work" >&2
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT

"$GO" build -o "$work/broker" ./examples/broker
"$work/broker" \
	--listeners PLAIN://127.0.0.1:9092,SASL://127.0.0.1:9093 \
	--advertised.listeners PLAIN://localhost:9092,SASL://localhost:9093 \
	--listener.security.protocol.map PLAIN:PLAINTEXT,SASL:SASL_PLAINTEXT \
	--inter.broker.listener.name PLAIN \
	--authorizer.class.name org.apache.kafka.metadata.authorizer.StandardAuthorizer \
	--allow.everyone.if.no.acl.found true \
	--super.users 'User:adminscram256;User:adminscram512;User:adminplain' \
	--add-scram 'SCRAM-SHA-256=[name=adminscram256,password=admin-secret-256];SCRAM-SHA-512=[name=adminscram512,password=admin-secret-512];SCRAM-SHA-512=[name=adminplain,password=admin-secret]' \
	--group.initial.rebalance.delay.ms 0 \
	--message.max.bytes 200000000 \
	>"$work/broker.log" 2>&1 &
broker_pid=$!
for _ in $(seq 300); do
	if accepts 127.0.0.1:9093 && grep -q "add-scram: credentials created" "$work/broker.log"; then
		break
	fi
	kill -0 "$broker_pid" 2>/dev/null || { cat "$work/broker.log" >&2; exit 1; }
	sleep 0.1
done

# Not run, with why:
#   TestReaderConsumerGroup's "consumer group rebalance": it cannot pass
#     when the group works as Kafka's does. It writes 24 records round robin
#     to a 3-partition topic (8 a partition) and asks each of two readers of
#     one group for 12, committing nothing. Two members split 3 partitions
#     2:1 (kafka-go's range balancer, members ordered by their random ids),
#     so one reader holds 8 records and waits for ever. It passes only when
#     a reader is evicted mid-test: its rebalance timeout (2s) equals its
#     heartbeat interval, so a rejoin can miss the deadline, and an evicted
#     kafka-go reader goes on returning what it had fetched for its old
#     generation. 1 run of 6 passed here (2026-11-27), each time by that
#     eviction; the 5 failures were clean 2:1 splits. Not run: a broker fix
#     would mean breaking the protocol for the test;
#   TestReaderConsumerGroup's "verify offset committed", "verify offset
#     committed when using interval committer" and "consumer group commits
#     on close": they panic in kafka-go v0.4.51 itself, whatever the
#     broker: their getOffsets builds a ConsumerGroup without the connect
#     function NewConsumerGroup sets, and calls it (a nil func).
skip='^TestReaderConsumerGroup$/^(verify_offset_committed|verify_offset_committed_when_using_interval_committer|consumer_group_commits_on_close|consumer_group_rebalance)$'

cd test/kafkago
set +e
KAFKA_VERSION=4.0.0 "$GO" test -count=1 -timeout 10m ${TESTFLAGS:-} -skip "$skip" github.com/segmentio/kafka-go/...
status=$?
set -e
if grep -q 'handler panicked' "$work/broker.log"; then
	echo "kafka-go: a broker handler panicked" >&2
	status=1
fi
exit $status
