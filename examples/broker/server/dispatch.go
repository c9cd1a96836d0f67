package server

import (
	"fmt"
	"runtime/debug"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// An api is a request kind the broker serves, with the versions it serves.
type api struct {
	key      kmsg.Key
	min, max int16
	handle   func(s *Server, r *request)
}

// apis is filled by the init function of each API's file (00_produce.go,
// 01_fetch.go, ...), which states the versions it serves.
var apis = map[kmsg.Key]*api{}

// serve registers the handler of key for versions min to max; max is capped
// at the newest version kmsg knows.
func serve(key kmsg.Key, min, max int16, handle func(*Server, *request)) {
	if newest := kmsg.RequestForKey(int16(key)).MaxVersion(); max > newest {
		max = newest
	}
	if _, dup := apis[key]; dup {
		panic(fmt.Sprintf("server: %s registered twice", key.Name()))
	}
	apis[key] = &api{key: key, min: min, max: max, handle: handle}
}

// supports reports whether the broker serves version of key.
func (s *Server) supports(key, version int16) bool {
	a := apis[kmsg.Key(key)]
	return a != nil && version >= a.min && version <= a.max
}

// servedAPIs returns the served APIs by key, for ApiVersions.
func servedAPIs() []*api {
	out := make([]*api, 0, len(apis))
	for _, a := range apis {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// dispatch hands r to its handler, on the connection's reader goroutine.
// Handlers never block: a request that has to wait becomes an operation in
// a purgatory. A panicking handler is a bug: it is logged with its stack and
// the connection is closed, as if the request were malformed; the broker
// goes on.
func (s *Server) dispatch(r *request) {
	defer func() {
		if v := recover(); v != nil {
			r.log().Error("handler panicked; closing the connection", zap.Any("panic", v), zap.ByteString("stack", debug.Stack()))
			s.metrics.panics.Inc()
			_ = r.c.nc.Close()
		}
	}()
	if s.checkStrings(r) {
		return // refused: a string past Kafka's limits
	}
	apis[kmsg.Key(r.kreq.Key())].handle(s, r)
	if kmsg.Key(r.kreq.Key()) != kmsg.Produce {
		// The request is decoded and handled: what waits for an answer
		// (a long poll, a join through a rebalance) holds no more of
		// the budget than its answer will. A produce's batches alias
		// the body until appended; it gives it back when answered.
		r.releaseBody()
	}
}
