package test

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Ports for test brokers are picked below the kernel's ephemeral range.
// A port of that range, free when looked at, can be taken a moment later
// as the local port of any client connection (another test's, another
// package's, a killed broker's peers reconnecting), and a broker restarted
// on it then fails to bind. Below the range only listeners take ports, and
// ports handed out here are not handed out again in this process.
var ports struct {
	sync.Mutex
	given map[int]bool
}

// portFloor is the lowest port handed out: above the well-known and the
// usual development ports.
const portFloor = 12000

// ephemeralLow returns the first port of the kernel's ephemeral range
// (Linux's default, 32768, when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if lo, err := strconv.Atoi(f[0]); err == nil && lo > portFloor+1000 {
				return lo
			}
		}
	}
	return 32768
}

// freePort returns a loopback address nothing listens on now.
func freePort(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(freePortRun(t, 1)))
}

// freePortRun returns the first of n consecutive loopback ports that are
// free now and were not handed out before in this process, and so are the
// n ports from base+shift for each shift (a quorum port is Kafka's + 1000).
func freePortRun(t testing.TB, n int, shifts ...int) int {
	t.Helper()
	ports.Lock()
	defer ports.Unlock()
	if ports.given == nil {
		ports.given = make(map[int]bool)
	}
	shifts = append([]int{0}, shifts...)
	span := ephemeralLow() - portFloor - n - max(0, shifts[len(shifts)-1])
	for range 1000 {
		base := portFloor + rand.IntN(span)
		if runFree(base, n, shifts) {
			for _, s := range shifts {
				for p := base + s; p < base+s+n; p++ {
					ports.given[p] = true
				}
			}
			return base
		}
	}
	t.Fatal("no run of free ports below the ephemeral range")
	return 0
}

// runFree reports whether ports base+shift to base+shift+n-1, for each
// shift, are neither handed out nor listened on.
func runFree(base, n int, shifts []int) bool {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	for _, s := range shifts {
		for p := base + s; p < base+s+n; p++ {
			if ports.given[p] {
				return false
			}
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				return false
			}
			lns = append(lns, ln)
		}
	}
	return true
}
