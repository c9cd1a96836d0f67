package kafkanet

import (
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Mux is the table of the APIs a server serves, each with its version
// range and its handler H (the server's own type), as net/http's ServeMux
// is of paths: the broker and the proxy fill one from the init function of
// each API's file (00_produce.go, 01_fetch.go, ...), and their Handler
// dispatches on it and lists it in ApiVersions. The zero value is empty
// and ready. Handle is not safe for concurrent use: fill the table before
// serving, and only read it afterwards.
type Mux[H any] struct {
	apis map[kmsg.Key]*API[H]
}

// An API is a request kind served, with the versions served and its
// handler.
type API[H any] struct {
	Key      kmsg.Key
	Min, Max int16
	Handler  H
}

// Handle registers h as the handler of key for versions min to max; max is
// capped at the newest version kmsg knows. It returns the entry, which the
// caller may annotate through its Handler. A key registered twice is a
// programmer's error: it panics.
func (m *Mux[H]) Handle(key kmsg.Key, min, max int16, h H) *API[H] {
	if newest := kmsg.RequestForKey(int16(key)).MaxVersion(); max > newest {
		max = newest
	}
	if _, dup := m.apis[key]; dup {
		panic(fmt.Sprintf("kafkanet: %s registered twice", key.Name()))
	}
	if m.apis == nil {
		m.apis = make(map[kmsg.Key]*API[H])
	}
	a := &API[H]{Key: key, Min: min, Max: max, Handler: h}
	m.apis[key] = a
	return a
}

// Lookup returns the entry of key, or nil if it is not served.
func (m *Mux[H]) Lookup(key int16) *API[H] { return m.apis[kmsg.Key(key)] }

// Supports reports whether version of key is served: what a Handler's
// Supports answers.
func (m *Mux[H]) Supports(key, version int16) bool {
	a := m.apis[kmsg.Key(key)]
	return a != nil && version >= a.Min && version <= a.Max
}

// APIs returns the entries by key, for ApiVersions.
func (m *Mux[H]) APIs() []*API[H] {
	out := make([]*API[H], 0, len(m.apis))
	for _, a := range m.apis {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
