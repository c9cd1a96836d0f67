package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

// An api is how the proxy serves a request kind: its handler, and whether
// the proxy answers it without forwarding the request as it is
// (ApiVersions), when the versions it advertises are its own rather than
// narrowed to what every upstream broker serves too (18_api_versions.go).
type api struct {
	local  bool
	handle func(*Server, *request)
	// check is how a client's request is authorized (authz.go); an API
	// without one is refused when authorization is on. local APIs are
	// not checked.
	check check
	// begin, when set, runs before the check: it answers the request
	// itself (and reports true), or sets what the check and the handler
	// see. A fetch of a session becomes the full fetch the session
	// stands for (fetch_sessions.go).
	begin func(*Server, *request) bool
}

// apis is filled by the init functions of the API files (00_produce.go,
// 01_fetch.go, ...) and of routes.go.
var apis kafkanet.Mux[api]

// serve registers the handler of key for versions min to max, capped at
// the newest version kmsg knows.
func serve(key kmsg.Key, min, max int16, handle func(*Server, *request)) *kafkanet.API[api] {
	return apis.Handle(key, min, max, api{handle: handle})
}

// handler is the proxy as its network layer (package kafkanet) sees it.
type handler struct{ s *Server }

var _ kafkanet.Handler = handler{}

// Supports reports whether the proxy serves version of key. The version
// ranges upstream narrows are not checked here: clients ask for what
// ApiVersions advertised, and upstream refuses the rest itself.
func (h handler) Supports(key, version int16) bool { return apis.Supports(key, version) }

// ServeKafka hands r to its handler on the connection's reader goroutine.
// Handlers do not block: what waits is an upstream callback or an
// operation in the fetch purgatory; the one exception is a coordinator
// lookup on a cache miss, which holds the connection's later requests
// behind it so that they reach upstream in order (see coordinators). A
// panic is kafkanet's to recover: the connection is closed.
//
// A fetch's session is resolved first (its begin): the check and the
// handler see the full fetch it stands for. With authorization on, the
// request is checked then (authz.go): a denial is answered here, and the
// handler serves what passed.
func (h handler) ServeKafka(r *kafkanet.Request) {
	a := apis.Lookup(r.Msg.Key()).Handler
	req := &request{Request: r, s: h.s}
	if a.begin != nil && a.begin(h.s, req) {
		return
	}
	if h.s.authorize(req, a) {
		return
	}
	a.handle(h.s, req)
}
