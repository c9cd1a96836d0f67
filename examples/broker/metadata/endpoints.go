package metadata

import (
	"maps"
	"slices"
)

// Endpoint is one of a broker's listeners as clients reach it (Kafka's
// BrokerEndpoint, registered by BrokerRegistration): the Metadata and
// FindCoordinator answers given on a listener name each broker at its own
// endpoint of that name.
type Endpoint struct {
	Listener string `json:"listener"`
	Host     string `json:"host"`
	Port     int32  `json:"port"`
	Protocol string `json:"protocol"`
}

// BrokerEndpoints sets a broker's endpoints, all of them at once.
type BrokerEndpoints struct {
	Broker    int32      `json:"broker"`
	Endpoints []Endpoint `json:"endpoints"`
}

// Endpoint returns broker's endpoint of listener.
func (im *Image) Endpoint(broker int32, listener string) (Endpoint, bool) {
	for _, e := range im.endpoints[broker] {
		if e.Listener == listener {
			return e, true
		}
	}
	return Endpoint{}, false
}

// Endpoints returns broker's endpoints, as registered (nil: none).
func (im *Image) Endpoints(broker int32) []Endpoint { return slices.Clone(im.endpoints[broker]) }

// applyEndpoints applies changes to the image's endpoints, copying them
// first: images share them until a record changes them.
func (im *Image) applyEndpoints(changes []BrokerEndpoints) {
	if len(changes) == 0 {
		return
	}
	im.endpoints = maps.Clone(im.endpoints)
	if im.endpoints == nil {
		im.endpoints = make(map[int32][]Endpoint)
	}
	for _, c := range changes {
		im.endpoints[c.Broker] = slices.Clone(c.Endpoints)
	}
}

// endpointEntries returns the endpoints as a snapshot holds them, by
// broker.
func (im *Image) endpointEntries() []BrokerEndpoints {
	out := make([]BrokerEndpoints, 0, len(im.endpoints))
	for _, id := range slices.Sorted(maps.Keys(im.endpoints)) {
		out = append(out, BrokerEndpoints{Broker: id, Endpoints: im.endpoints[id]})
	}
	return out
}
