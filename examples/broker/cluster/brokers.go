package cluster

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/gopurgatory/purgatory/examples/broker/metalog"
)

// The cluster's brokers: every broker is started with the same --cluster
// list (id@host:port,...), which names the brokers and their Kafka
// listeners. Every broker of it is also a voter of the metadata quorum
// (KRaft's combined mode, package metalog), whose Raft transport listens at
// the address controller.quorum.voters gives it (id@host:port,..., as
// Kafka's config), or, without that setting, at its Kafka listener's host
// and port + 1000 (quorumPortOffset).

// quorumPortOffset derives a voter's Raft port from its Kafka port when
// controller.quorum.voters is not set.
const quorumPortOffset = 1000

// Node is one broker of the cluster: its id and Kafka listener.
type Node struct {
	ID   int32
	Host string
	Port int32
}

// Addr returns n's listener as host:port.
func (n Node) Addr() string { return net.JoinHostPort(n.Host, strconv.Itoa(int(n.Port))) }

// Brokers is the brokers this broker belongs to, and the quorum they vote
// in; immutable. A broker alone is a cluster of one, with no quorum: its
// metadata log is local.
type Brokers struct {
	nodes  []Node // by id
	self   int32
	voters []metalog.Voter // the quorum; empty for a broker alone
}

// ProducerIDShift places a broker's producer ids at node id <<
// ProducerIDShift, a range of its own (Kafka has its controller hand out
// blocks instead): a trillion ids per broker, for node ids below
// MaxNodeID.
const ProducerIDShift = 40

// MaxNodeID is the largest node id: one whose producer ids still fit in an
// int64 (ProducerIDShift).
const MaxNodeID = 1<<(63-ProducerIDShift) - 1

// parseNodes reads id@host:port entries separated by commas, ids unique.
func parseNodes(what, spec string) ([]Node, error) {
	var nodes []Node
	for _, e := range strings.Split(spec, ",") {
		e = strings.TrimSpace(e)
		idText, addr, ok := strings.Cut(e, "@")
		if !ok {
			return nil, fmt.Errorf("%s: %q: want id@host:port", what, e)
		}
		id, err := strconv.ParseInt(idText, 10, 32)
		if err != nil || id < 0 || id > MaxNodeID {
			return nil, fmt.Errorf("%s: %q: the id is not a node id (0 to %d)", what, e, MaxNodeID)
		}
		host, portText, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", what, e, err)
		}
		port, err := strconv.ParseUint(portText, 10, 16)
		if err != nil || port == 0 {
			return nil, fmt.Errorf("%s: %q: the port is not a port", what, e)
		}
		if slices.ContainsFunc(nodes, func(n Node) bool { return n.ID == int32(id) }) {
			return nil, fmt.Errorf("%s: node %d is listed twice", what, id)
		}
		nodes = append(nodes, Node{ID: int32(id), Host: host, Port: int32(port)})
	}
	slices.SortFunc(nodes, func(a, b Node) int { return int(a.ID) - int(b.ID) })
	return nodes, nil
}

// Parse reads --cluster, with self among its ids, and the quorum's
// voters: controller.quorum.voters, the same ids, or derived.
func Parse(spec, voters string, self int32) (*Brokers, error) {
	nodes, err := parseNodes("cluster", spec)
	if err != nil {
		return nil, err
	}
	c := &Brokers{nodes: nodes, self: self}
	if _, ok := c.Node(self); !ok {
		return nil, fmt.Errorf("cluster: node.id %d is not in %q", self, spec)
	}
	if voters == "" {
		for _, n := range nodes {
			if n.Port+quorumPortOffset > 65535 {
				return nil, fmt.Errorf("cluster: node %d's port %d leaves no room for its quorum port (+%d): set controller.quorum.voters",
					n.ID, n.Port, quorumPortOffset)
			}
			c.voters = append(c.voters, metalog.Voter{ID: n.ID,
				Addr: net.JoinHostPort(n.Host, strconv.Itoa(int(n.Port+quorumPortOffset)))})
		}
		return c, nil
	}
	vs, err := parseNodes("controller.quorum.voters", voters)
	if err != nil {
		return nil, err
	}
	if !slices.EqualFunc(vs, nodes, func(a, b Node) bool { return a.ID == b.ID }) {
		return nil, fmt.Errorf("controller.quorum.voters: every broker of --cluster is a voter, and only they: %q", voters)
	}
	for _, v := range vs {
		c.voters = append(c.voters, metalog.Voter{ID: v.ID, Addr: v.Addr()})
	}
	return c, nil
}

// Single is the cluster of one broker, self.
func Single(self Node) *Brokers { return &Brokers{nodes: []Node{self}, self: self.ID} }

// Self returns this broker's node id.
func (c *Brokers) Self() int32 { return c.self }

// Node returns broker id, if the cluster has it.
func (c *Brokers) Node(id int32) (Node, bool) {
	i := slices.IndexFunc(c.nodes, func(n Node) bool { return n.ID == id })
	if i < 0 {
		return Node{}, false
	}
	return c.nodes[i], true
}

// Nodes returns the brokers, by id. The slice is the caller's.
func (c *Brokers) Nodes() []Node { return slices.Clone(c.nodes) }

// IDs returns the brokers' ids, ascending.
func (c *Brokers) IDs() []int32 {
	out := make([]int32, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.ID
	}
	return out
}

// Placement returns the replicas the controller gives partition p of a
// topic with replication factor rf (metadata.Place): the brokers in id
// order from index p mod n on, wrapping around.
func (c *Brokers) Placement(p int32, rf int) []int32 {
	out := make([]int32, 0, rf)
	for i := range rf {
		out = append(out, c.nodes[(int(p)+i)%len(c.nodes)].ID)
	}
	return out
}

// Size returns the number of brokers.
func (c *Brokers) Size() int { return len(c.nodes) }
