// Package test holds the end-to-end tests of the example broker: most
// tests start brokers in-process on loopback ports and drive them with real
// Kafka clients (franz-go's kgo, and kcat on librdkafka) and with raw kmsg
// requests where a test needs exact control of the wire.
//
// # Consumer groups
//
// The group tests (group_*_test.go) run kgo group consumers against the
// coordinator: partitions shared and handed over as members leave and
// join, a silent member expelled at its session timeout, offsets that
// outlive the group's members, a static member restarting without a
// rebalance. Their consumers count every record they process in a ledger
// and commit only what they processed, on revoke too (groupConsumer), so
// each test can assert that every record was consumed exactly once.
// BenchmarkGroupRebalance times a 100-member group's rebalance, and a
// 101st member's join, with the classic protocol and with KIP-848's, on a
// broker binary in a child process.
//
// # Durability
//
// TestDurableRestart stops a broker with log.dirs and starts another on
// its directory: every acknowledged record is there in order once, group
// offsets are back, a retried batch is deduplicated, new producer ids are
// new. TestKill9 runs the broker as a child process (this test binary,
// started again: see TestMain), kills it with SIGKILL while a producer
// sends, and checks every acknowledged record at its offset after a
// restart.
//
// # Hostile clients
//
// The tests of hostile_test.go attack the broker as issue 11's clients
// did: connections past RLIMIT_NOFILE, a slowloris claiming 100 MB
// requests, a 33-byte tag-count bomb, a corruption found after a clean
// shutdown, batches whose records lie. Where an attack could take the
// machine down before its fix, it runs against the broker binary (built
// once per test run) in a child process under prlimit's limits (file
// descriptors, address space), and asserts from outside: the process's
// CPU time from /proc, its heap from /metrics, its exit and its log.
//
// # Cluster
//
// The cluster tests (cluster_test.go) start three in-process brokers that
// replicate: acks=all waits for the followers, a follower leaves and
// rejoins the ISR and truncates to its leader, groups and topic creation
// go to the controller, and TestClusterKill9Controller kills the
// controller's process. TestClusterScript runs scripts/cluster.sh, and
// TestClusterScriptSCRAM runs it with ADD_SCRAM (a SASL_PLAINTEXT listener
// on every broker, as make kgo-integration-cluster uses).
//
// # Security
//
// The security tests (security_test.go, acl_test.go) serve TLS and SASL
// listeners to kgo, kcat, librdkafka and kafkajs clients, and check the
// authorizer as a client meets it: Kafka's error codes for unauthenticated
// and unauthorized clients, a grant opening one topic and its group, DENY
// over a PREFIXED ALLOW, kadm's ACL round trip, bindings that survive a
// restart and reach every broker of a cluster, a spoofed replica fetch
// refused.
//
// # Faults
//
// The fault tests (failover_test.go, fault_test.go) run three broker
// binaries as child processes (startProcessCluster), each a voter of the
// metadata quorum, under an idempotent acks=all load whose every
// acknowledgement is kept in a ledger: a leader or a follower killed -9, a
// controlled shutdown, a leader frozen with SIGSTOP past its session then
// resumed, the active controller killed -9, and TestChaos, a random broker
// killed -9 and restarted or frozen and resumed every few seconds
// (PURGATORY_CHAOS_DURATION). Each ends by reading every acknowledged
// record back once, at its offset. BenchmarkFailover times failovers.
// TestShareCoordinatorKill9 (share_kill9_test.go) runs a share group of
// three kgo consumers under load, cuts one off mid-batch and kills the
// share coordinator's broker -9: every record delivered and acknowledged,
// none past the delivery count limit, the cut consumer's records back
// after the lock duration.
//
// # Proxy
//
// The proxy tests (proxy_*_test.go) put examples/proxy in front of
// in-process brokers and drive it with kgo clients, kcat and raw kmsg
// requests: every record read once, in order, byte for byte, by groups and
// direct consumers while producers write through the proxy (in front of
// one broker and of a cluster); 100 consumers in 100 groups tailing one
// partition while the broker counts one fetch per round, not 100; a
// fetch's min_bytes, max_bytes, partition_max_bytes and max_wait_ms;
// upstream's errors passed on; a broker restarted, or gone, under waiting
// fetches; a client leaving; older client versions kept; the metadata the
// proxy answers. The test/proxyperf tool measures the proxy against the
// broker alone.
package test
