// Package kfakecmp benchmarks the example broker against franz-go's kfake,
// run the same way on the same machine: each broker in a child process of
// its own (the test binary, re-executed), so that the CPU figures are the
// broker's alone (the child reports its getrusage on request), and driven by
// the same kgo clients from the parent.
//
//	cd test/kfakecmp && go test -run '^$' -bench . -count 10 | tee bench.txt
//	benchstat -col /broker bench.txt
//
// or make bench-broker from the repository root.
//
// # Share groups
//
// BenchmarkShareConsume reads a partition pre-filled with b.N 100-byte
// records with a share group (KIP-932) of one and of three kgo share
// consumers, each record accepted (timed until every acknowledgement is
// answered; the group's start offset is then checked to have passed every
// record): records/s and the broker's CPU per record. BenchmarkShareEndToEndLatency times one record
// at a time from its produce call to its arrival at a share consumer: p50
// and p99. Both brokers serve share groups with their defaults; each
// benchmark sets the group's share.auto.offset.reset to earliest
// (IncrementalAlterConfigs on the GROUP resource) before its consumers
// join. To run them alone:
//
//	cd test/kfakecmp && go test -run '^$' -bench '^BenchmarkShare' -count 10 | tee share.txt
//	benchstat -col /broker share.txt
package kfakecmp
