package test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// netnsCluster is a network of the test's own for three brokers, each in
// a network namespace, on two networks of veth pairs and bridges:
//
//	clients  10.231.N.0/24: bridge pc<tag> in the test's namespace (.254),
//	         ci in each broker's namespace (.id): the clients' listener
//	cluster  10.232.N.0/24: bridge pk<tag>, no address of the test's,
//	         ki in each broker's namespace (.id): the inter-broker
//	         listener and the metadata quorum
//
// cut takes a broker's cluster link down: it can no longer reach the
// other two brokers nor they it, while clients still reach it, which no
// kill or SIGSTOP can do. heal brings the link back. Everything is
// removed at the test's end.
type netnsCluster struct {
	t     *testing.T
	tag   string // in every name: tests and runs do not collide
	net   int    // N in the addresses
	links []string
}

// netnsSeq numbers the netnsClusters of a test run.
var netnsSeq atomic.Int32

// newNetnsCluster makes the namespaces and networks, or skips the test
// with why where they cannot be made (not root, no iproute2, no netns
// support in the kernel or the sandbox).
func newNetnsCluster(t *testing.T) *netnsCluster {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network partitions need network namespaces, which need root (CI runs as root)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("network partitions need ip (Debian's iproute2):", err)
	}
	seq := netnsSeq.Add(1)
	n := &netnsCluster{t: t, tag: fmt.Sprintf("%03x%d", os.Getpid()&0xfff, seq%10), net: (os.Getpid()+int(seq))%200 + 20}
	t.Cleanup(n.remove)
	if err := n.try("link", "add", n.bridge("c"), "type", "bridge"); err != nil {
		t.Skip("network namespaces cannot be made here:", err)
	}
	n.links = append(n.links, n.bridge("c"))
	n.ip("addr", "add", fmt.Sprintf("10.231.%d.254/24", n.net), "dev", n.bridge("c"))
	n.ip("link", "set", n.bridge("c"), "up")
	n.ip("link", "add", n.bridge("k"), "type", "bridge")
	n.links = append(n.links, n.bridge("k"))
	n.ip("link", "set", n.bridge("k"), "up")
	for id := int32(1); id <= 3; id++ {
		ns := n.ns(id)
		n.ip("netns", "add", ns)
		n.ip("-n", ns, "link", "set", "lo", "up")
		for _, side := range []struct{ net, inside string }{{"c", "ci"}, {"k", "ki"}} {
			outside := fmt.Sprintf("%s%s%d", side.net, n.tag, id)
			n.ip("link", "add", outside, "type", "veth", "peer", "name", side.inside, "netns", ns)
			n.ip("link", "set", outside, "master", n.bridge(side.net), "up")
			n.ip("-n", ns, "addr", "add", n.addr(side.net, id)+"/24", "dev", side.inside)
			n.ip("-n", ns, "link", "set", side.inside, "up")
		}
	}
	return n
}

func (n *netnsCluster) bridge(net string) string { return "p" + net + n.tag }

// ns is broker id's namespace.
func (n *netnsCluster) ns(id int32) string { return fmt.Sprintf("pn%s-%d", n.tag, id) }

// addr is broker id's address on network net ("c" clients, "k" cluster).
func (n *netnsCluster) addr(net string, id int32) string {
	if net == "c" {
		return fmt.Sprintf("10.231.%d.%d", n.net, id)
	}
	return fmt.Sprintf("10.232.%d.%d", n.net, id)
}

// cut takes broker id's cluster link down; heal brings it up again.
func (n *netnsCluster) cut(id int32)  { n.ip("-n", n.ns(id), "link", "set", "ki", "down") }
func (n *netnsCluster) heal(id int32) { n.ip("-n", n.ns(id), "link", "set", "ki", "up") }

func (n *netnsCluster) ip(args ...string) {
	n.t.Helper()
	require.NoError(n.t, n.try(args...))
}

func (n *netnsCluster) try(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// remove deletes the namespaces (their ends of the veth pairs, and so the
// pairs) and the bridges. The brokers in them are killed first by their
// own cleanups, registered after this one.
func (n *netnsCluster) remove() {
	for id := int32(1); id <= 3; id++ {
		_ = n.try("netns", "del", n.ns(id))
	}
	for _, l := range n.links {
		_ = n.try("link", "del", l)
	}
}

// startBrokers starts brokers 1 to 3, each in its namespace, with args
// added: clients' listener EXTERNAL on the clients' network, INTERNAL
// (between brokers) and the quorum on the cluster network.
func (n *netnsCluster) startBrokers(args ...string) *processCluster {
	t := n.t
	t.Helper()
	c := &processCluster{t: t, addrs: map[int32]string{}, procs: map[int32]*brokerProcess{}, argv: map[int32][]string{}}
	var spec, voters []string
	for id := int32(1); id <= 3; id++ {
		c.addrs[id] = n.addr("c", id) + ":9093"
		spec = append(spec, fmt.Sprintf("%d@%s:9092", id, n.addr("k", id)))
		voters = append(voters, fmt.Sprintf("%d@%s:10092", id, n.addr("k", id)))
	}
	for id := int32(1); id <= 3; id++ {
		argv := append([]string{"--node.id", fmt.Sprint(id),
			"--listeners", fmt.Sprintf("INTERNAL://%s:9092,EXTERNAL://%s", n.addr("k", id), c.addrs[id]),
			"--listener.security.protocol.map", "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
			"--inter.broker.listener.name", "INTERNAL",
			"--cluster", strings.Join(spec, ","), "--controller.quorum.voters", strings.Join(voters, ","),
			"--log.dirs", t.TempDir()}, args...)
		c.argv[id] = argv
		c.procs[id] = runBrokerProcess(t, limits{netns: n.ns(id)}, argv...)
	}
	for id, p := range c.procs {
		require.Eventually(t, func() bool { return p.served() || p.hasExited() }, 30*time.Second, 10*time.Millisecond,
			"broker %d starts", id)
		require.False(t, p.hasExited(), "broker %d exited at start:\n%s", id, p.output())
	}
	return c
}
