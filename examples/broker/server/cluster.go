package server

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// A static cluster: every broker is started with the same --cluster list
// (id@host:port,...), and nothing is elected. The controller is the broker
// with the smallest id: it alone creates and deletes topics, and it
// coordinates every consumer group. Each partition's replicas are fixed by
// its number (see replicasOf), and the first replica leads it for good.
//
// There is no leader election: when a leader is down, its partitions are
// unavailable until it comes back (clients retry NOT_LEADER_OR_FOLLOWER
// and connection errors meanwhile). A cluster that must survive a leader's
// loss needs a controller quorum that moves leadership, which is the
// place for an existing consensus library (Kafka's KRaft, etcd's raft),
// not for a home-made one; this example does not attempt it.

// node is one broker of the cluster.
type node struct {
	id   int32
	host string
	port int32
}

func (n node) addr() string { return net.JoinHostPort(n.host, strconv.Itoa(int(n.port))) }

// cluster is the static cluster this broker belongs to. A broker alone is
// a cluster of one: itself, controller and leader of everything.
type cluster struct {
	nodes []node // by id
	self  int32
}

// parseCluster reads --cluster: id@host:port entries separated by commas,
// ids unique and self among them.
func parseCluster(spec string, self int32) (*cluster, error) {
	c := &cluster{self: self}
	for _, e := range strings.Split(spec, ",") {
		e = strings.TrimSpace(e)
		idText, addr, ok := strings.Cut(e, "@")
		if !ok {
			return nil, fmt.Errorf("cluster: %q: want id@host:port", e)
		}
		id, err := strconv.ParseInt(idText, 10, 32)
		if err != nil || id < 0 || id >= 1<<(63-producerIDNodeShift) {
			return nil, fmt.Errorf("cluster: %q: the id is not a node id (0 to %d)", e, 1<<(63-producerIDNodeShift)-1)
		}
		host, portText, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("cluster: %q: %w", e, err)
		}
		port, err := strconv.ParseUint(portText, 10, 16)
		if err != nil || port == 0 {
			return nil, fmt.Errorf("cluster: %q: the port is not a port", e)
		}
		if slices.ContainsFunc(c.nodes, func(n node) bool { return n.id == int32(id) }) {
			return nil, fmt.Errorf("cluster: node %d is listed twice", id)
		}
		c.nodes = append(c.nodes, node{id: int32(id), host: host, port: int32(port)})
	}
	slices.SortFunc(c.nodes, func(a, b node) int { return int(a.id) - int(b.id) })
	if _, ok := c.node(self); !ok {
		return nil, fmt.Errorf("cluster: node.id %d is not in %q", self, spec)
	}
	return c, nil
}

// single is the cluster of one broker.
func single(self node) *cluster { return &cluster{nodes: []node{self}, self: self.id} }

func (c *cluster) node(id int32) (node, bool) {
	i := slices.IndexFunc(c.nodes, func(n node) bool { return n.id == id })
	if i < 0 {
		return node{}, false
	}
	return c.nodes[i], true
}

// controller is the broker with the smallest id.
func (c *cluster) controller() int32 { return c.nodes[0].id }

// isController reports whether this broker is the controller.
func (c *cluster) isController() bool { return c.controller() == c.self }

// size is the number of brokers.
func (c *cluster) size() int { return len(c.nodes) }

// replicasOf returns the replicas of partition p of a topic with
// replication factor rf (at most the cluster's size): the brokers in id
// order starting at index p mod n, wrapping around. The first leads it.
// With three brokers 1, 2, 3 and rf 3, partition 0 is [1 2 3], partition 1
// [2 3 1], partition 2 [3 1 2]: leadership spreads evenly, and every broker
// computes the same answer with nothing to agree on.
func (c *cluster) replicasOf(p int32, rf int16) []int32 {
	n := len(c.nodes)
	rf = max(1, min(rf, int16(n)))
	out := make([]int32, rf)
	for i := range out {
		out[i] = c.nodes[(int(p)+i)%n].id
	}
	return out
}

// leaderOf returns the broker leading partition p: replicasOf's first,
// without building the list (it is asked on every produce and fetch).
func (c *cluster) leaderOf(p int32) int32 { return c.nodes[int(p)%len(c.nodes)].id }
