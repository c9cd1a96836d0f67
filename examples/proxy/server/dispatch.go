package server

import (
	"fmt"
	"runtime/debug"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// An api is a request kind the proxy serves, the versions it can serve,
// and its handler. What it advertises is narrowed to what every upstream
// broker serves too (18_api_versions.go).
type api struct {
	key      kmsg.Key
	min, max int16
	// local is set for APIs the proxy answers without forwarding the
	// request as it is (ApiVersions); their versions are not narrowed.
	local  bool
	handle func(*Server, *request)
}

// apis is filled by the init functions of the API files (00_produce.go,
// 01_fetch.go, ...) and of routes.go.
var apis = map[kmsg.Key]*api{}

// serve registers the handler of key for versions min to max, capped at
// the newest version kmsg knows.
func serve(key kmsg.Key, min, max int16, handle func(*Server, *request)) *api {
	if newest := kmsg.RequestForKey(int16(key)).MaxVersion(); max > newest {
		max = newest
	}
	if _, dup := apis[key]; dup {
		panic(fmt.Sprintf("proxy: %s registered twice", key.Name()))
	}
	a := &api{key: key, min: min, max: max, handle: handle}
	apis[key] = a
	return a
}

// supports reports whether the proxy serves version of key. The version
// ranges upstream narrows are not checked here: clients ask for what
// ApiVersions advertised, and upstream refuses the rest itself.
func supports(key, version int16) bool {
	a := apis[kmsg.Key(key)]
	return a != nil && version >= a.min && version <= a.max
}

// servedAPIs returns the APIs by key.
func servedAPIs() []*api {
	out := make([]*api, 0, len(apis))
	for _, a := range apis {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// dispatch hands r to its handler on the connection's reader goroutine.
// Handlers do not block: what waits is an upstream callback or an
// operation in the fetch purgatory; the one exception is a coordinator
// lookup on a cache miss, which holds the connection's later requests
// behind it so that they reach upstream in order (see coordinators). A panicking handler is a bug: it is logged and
// counted, and the connection closed; the proxy goes on.
func (s *Server) dispatch(r *request) {
	defer func() {
		if v := recover(); v != nil {
			r.log().Error("handler panicked; closing the connection", zap.Any("panic", v), zap.ByteString("stack", debug.Stack()))
			s.metrics.panics.Inc()
			_ = r.c.nc.Close()
		}
	}()
	apis[kmsg.Key(r.kreq.Key())].handle(s, r)
}
