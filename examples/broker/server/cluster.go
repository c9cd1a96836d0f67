package server

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/gopurgatory/purgatory/examples/broker/metalog"
)

// The cluster: every broker is started with the same --cluster list
// (id@host:port,...), which names the brokers and their Kafka listeners.
// Every broker of it is also a voter of the metadata quorum (KRaft's
// combined mode, package metalog), whose Raft transport listens at the
// address controller.quorum.voters gives it (id@host:port,..., as Kafka's
// config), or, without that setting, at its Kafka listener's host and
// port + 1000 (quorumPortOffset). The quorum's leader is the active
// controller (package controller): it places topics, fences brokers whose
// sessions expire and elects new leaders; every broker serves Metadata
// from the log it applies (metadata.go).

// quorumPortOffset derives a voter's Raft port from its Kafka port when
// controller.quorum.voters is not set.
const quorumPortOffset = 1000

// node is one broker of the cluster.
type node struct {
	id   int32
	host string
	port int32
}

func (n node) addr() string { return net.JoinHostPort(n.host, strconv.Itoa(int(n.port))) }

// cluster is the brokers this broker belongs to. A broker alone is a
// cluster of one, with no quorum: its metadata log is local.
type cluster struct {
	nodes  []node // by id
	self   int32
	voters []metalog.Voter // the quorum; empty for a broker alone
}

// parseNodes reads id@host:port entries separated by commas, ids unique.
func parseNodes(what, spec string) ([]node, error) {
	var nodes []node
	for _, e := range strings.Split(spec, ",") {
		e = strings.TrimSpace(e)
		idText, addr, ok := strings.Cut(e, "@")
		if !ok {
			return nil, fmt.Errorf("%s: %q: want id@host:port", what, e)
		}
		id, err := strconv.ParseInt(idText, 10, 32)
		if err != nil || id < 0 || id >= 1<<(63-producerIDNodeShift) {
			return nil, fmt.Errorf("%s: %q: the id is not a node id (0 to %d)", what, e, 1<<(63-producerIDNodeShift)-1)
		}
		host, portText, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", what, e, err)
		}
		port, err := strconv.ParseUint(portText, 10, 16)
		if err != nil || port == 0 {
			return nil, fmt.Errorf("%s: %q: the port is not a port", what, e)
		}
		if slices.ContainsFunc(nodes, func(n node) bool { return n.id == int32(id) }) {
			return nil, fmt.Errorf("%s: node %d is listed twice", what, id)
		}
		nodes = append(nodes, node{id: int32(id), host: host, port: int32(port)})
	}
	slices.SortFunc(nodes, func(a, b node) int { return int(a.id) - int(b.id) })
	return nodes, nil
}

// parseCluster reads --cluster, with self among its ids, and the quorum's
// voters: controller.quorum.voters, the same ids, or derived.
func parseCluster(spec, voters string, self int32) (*cluster, error) {
	nodes, err := parseNodes("cluster", spec)
	if err != nil {
		return nil, err
	}
	c := &cluster{nodes: nodes, self: self}
	if _, ok := c.node(self); !ok {
		return nil, fmt.Errorf("cluster: node.id %d is not in %q", self, spec)
	}
	if voters == "" {
		for _, n := range nodes {
			if n.port+quorumPortOffset > 65535 {
				return nil, fmt.Errorf("cluster: node %d's port %d leaves no room for its quorum port (+%d): set controller.quorum.voters",
					n.id, n.port, quorumPortOffset)
			}
			c.voters = append(c.voters, metalog.Voter{ID: n.id,
				Addr: net.JoinHostPort(n.host, strconv.Itoa(int(n.port+quorumPortOffset)))})
		}
		return c, nil
	}
	vs, err := parseNodes("controller.quorum.voters", voters)
	if err != nil {
		return nil, err
	}
	if !slices.EqualFunc(vs, nodes, func(a, b node) bool { return a.id == b.id }) {
		return nil, fmt.Errorf("controller.quorum.voters: every broker of --cluster is a voter, and only they: %q", voters)
	}
	for _, v := range vs {
		c.voters = append(c.voters, metalog.Voter{ID: v.id, Addr: v.addr()})
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

// ids returns the brokers' ids, ascending.
func (c *cluster) ids() []int32 {
	out := make([]int32, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.id
	}
	return out
}

// placement returns the replicas the controller gives partition p of a
// topic with replication factor rf (metadata.Place): the brokers in id
// order from index p mod n on, wrapping around.
func (c *cluster) placement(p int32, rf int) []int32 {
	out := make([]int32, 0, rf)
	for i := range rf {
		out = append(out, c.nodes[(int(p)+i)%len(c.nodes)].id)
	}
	return out
}

// size is the number of brokers.
func (c *cluster) size() int { return len(c.nodes) }
