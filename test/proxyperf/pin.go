package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// With --server-cpus, the broker and the proxy run on those CPUs (started
// under taskset) and this tool, whose goroutines are the clients, on the
// others: the clients then take no time from the servers, as when they run
// on machines of their own, and what the proxy adds to the latency is the
// proxy's, not the scheduling delay of a hundred consumers sharing its
// cores. Both phases run the same way.

// parseCPUList parses a CPU list as taskset takes it: "0", "0-2", "0,3".
func parseCPUList(s string) ([]int, error) {
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("%w: CPU list %q: %q is not a CPU", errUsage, s, part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("%w: CPU list %q: %q is not a range", errUsage, s, part)
			}
		}
		for c := a; c <= b; c++ {
			if !slices.Contains(cpus, c) {
				cpus = append(cpus, c)
			}
		}
	}
	slices.Sort(cpus)
	return cpus, nil
}

// otherCPUs returns the CPUs of 0..n-1 not in servers, for the clients; an
// error if servers names a CPU the machine lacks or leaves none.
func otherCPUs(servers []int, n int) ([]int, error) {
	var rest []int
	for c := range n {
		if !slices.Contains(servers, c) {
			rest = append(rest, c)
		}
	}
	switch {
	case servers[len(servers)-1] >= n:
		return nil, fmt.Errorf("%w: --server-cpus names CPU %d; this machine has %d", errUsage, servers[len(servers)-1], n)
	case len(rest) == 0:
		return nil, fmt.Errorf("%w: --server-cpus leaves no CPU for the clients", errUsage)
	}
	return rest, nil
}

// cpuList formats cpus for taskset.
func cpuList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

// pinSelf moves every thread of this process to cpus, and sizes GOMAXPROCS
// to them. Threads made later inherit the affinity of the thread that makes
// them, so the pass is repeated until it finds no thread it has not pinned.
func pinSelf(cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	pinned := map[int]bool{}
	for {
		tids, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		fresh := 0
		for _, t := range tids {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || pinned[tid] {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
				return fmt.Errorf("pin thread %d to CPUs %s: %w", tid, cpuList(cpus), err)
			}
			pinned[tid] = true
			fresh++
		}
		if fresh == 0 {
			break
		}
	}
	runtime.GOMAXPROCS(len(cpus))
	return nil
}
