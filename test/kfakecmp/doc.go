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
package kfakecmp
