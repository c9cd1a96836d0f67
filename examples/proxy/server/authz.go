package server

// Authorization of each client, when authorizer.class.name turns it on
// (config_security.go): every request a client sends is checked against
// its own principal, with the bindings of the upstream cluster
// (acls.go), as the broker checks it (package authz's table), before the
// proxy serves or forwards it; upstream sees only the proxy's principal,
// so the proxy's check is the only one the client's principal meets.
//
// # How a request is checked
//
// Each API the proxy serves has a check (its file's authorizeX, or
// routes.go's for those forwarded as they are); an API without one is
// refused when authorization is on: its connection is closed, never
// forwarded unchecked. A request is checked, in this order:
//
//  1. on the whole (authz.Gate: a group's READ for a JoinGroup, a
//     transactional id's WRITE for an EndTxn...): a denial answers it at
//     once, with Kafka's code wherever its response carries one
//     (authz.ErrorResponse); nothing reaches upstream;
//  2. per topic, group, key or resource: what the client may not touch
//     is taken out of the request, and the request goes on with the
//     rest, to its handler as if the client had asked for that alone;
//     the answer then gets the denied items back, each with Kafka's code
//     (TOPIC_AUTHORIZATION_FAILED for a topic, whether it exists or not,
//     so that its existence is not disclosed). A request with nothing
//     left is answered by the proxy with the denials alone. An acks=0
//     produce with a denied partition closes the connection, as Kafka
//     signals an acks=0 failure;
//  3. in the answer: what upstream answered for the proxy's principal
//     that this client may not see is hidden (the topics of a Metadata
//     for all topics, the groups of a ListGroups, the topics of an
//     OffsetFetch for all) or recomputed (KIP-430's authorized
//     operations, which upstream computed for the proxy).
//
// A fetch's denied partitions are taken out before the fetch is built,
// so that they are never read, from upstream or from the cache of a
// tail that another client's long poll filled: a client gets from the
// shared cache only the partitions its principal may READ.
//
// # Before the bindings are loaded
//
// Until the first DescribeAcls answer is loaded, the authorizer is a
// closed one: no binding and allow.everyone.if.no.acl.found off, so
// that every check fails but a super user's (Kafka's StandardAuthorizer
// allows its super users before its bindings are loaded too, and denies
// the rest). See acls.go for when it closes again.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/authz"
)

// A check is an API's checks of step 2 and 3 above: it returns the
// request to hand on (req itself, or a copy with what passed; nil when
// nothing did), and amend, which puts the denials back into the answer
// and hides what the client may not see (nil when there is nothing to
// do). It runs on the connection's reader goroutine; amend runs once, on
// the goroutine that answers.
type check func(s *Server, c authz.Access, req kmsg.Request) (fwd kmsg.Request, amend func(kmsg.Response))

// whole is the check of an API checked on the whole request alone
// (authz.Gate): what passes the gate goes on as it is.
func whole(_ *Server, _ authz.Access, req kmsg.Request) (kmsg.Request, func(kmsg.Response)) {
	return req, nil
}

// authorize checks r as its API says, when authorization is on, and
// reports whether it answered r (a denial, or nothing left to forward);
// otherwise r.Msg is what the handler is to serve, and r.amend what its
// answer needs.
func (s *Server) authorize(r *request, a api) bool {
	if s.acls == nil || a.local {
		return false // no authorization; or ApiVersions, SASL: no check
	}
	if a.check == nil {
		// Served, but not checked: never forwarded unchecked.
		r.hangUp(fmt.Errorf("%w: %s", ErrUnchecked, kmsg.NameForKey(r.Msg.Key())))
		return true
	}
	c := authz.For(s.acls.authorizer(), r.Request)
	if code := authz.Gate(c, r.Msg); code != 0 {
		if acksZero(r.Msg) {
			r.HangUp()
			return true
		}
		r.Respond(authz.ErrorResponse(r.Msg, code))
		return true
	}
	fwd, amend := a.check(s, c, r.Msg)
	if amend != nil && acksZero(r.Msg) && fwd != r.Msg {
		r.HangUp() // a denied partition, and no answer to carry it
		return true
	}
	r.amend = amend
	if fwd == nil {
		r.Respond(r.Msg.ResponseKind())
		return true
	}
	r.Msg = fwd
	return false
}

// acksZero reports whether req is a produce that is not answered.
func acksZero(req kmsg.Request) bool {
	p, ok := req.(*kmsg.ProduceRequest)
	return ok && p.Acks == 0
}

// refused is an item of a request that a check took out, with the code
// its answer gets.
type refused[T any] struct {
	item T
	code int16
}

// split divides items into those whose code is 0, in order, and the
// others with their codes.
func split[T any](items []T, code func(T) int16) (kept []T, denied []refused[T]) {
	for _, it := range items {
		if c := code(it); c != 0 {
			denied = append(denied, refused[T]{it, c})
		} else {
			kept = append(kept, it)
		}
	}
	return kept, denied
}

// narrowed is what a check hands on after a split: req itself when
// nothing was denied, nil when everything was, else the copy keep makes
// of req with only what passed.
func narrowed[T any](req kmsg.Request, kept []T, denied []refused[T], keep func() kmsg.Request) kmsg.Request {
	switch {
	case len(denied) == 0:
		return req
	case len(kept) == 0:
		return nil
	}
	return keep()
}

// checked is the check of an API whose request lists items (topics,
// groups, resources) checked one by one: what passes goes on in keep's
// copy of the request, and deny adds each denied item's answer to the
// response.
func checked[T any](req kmsg.Request, items []T, code func(T) int16, keep func([]T) kmsg.Request,
	deny func(kmsg.Response, refused[T])) (kmsg.Request, func(kmsg.Response)) {
	kept, denied := split(items, code)
	fwd := narrowed(req, kept, denied, func() kmsg.Request { return keep(kept) })
	if len(denied) == 0 {
		return fwd, nil
	}
	return fwd, func(resp kmsg.Response) {
		for _, d := range denied {
			deny(resp, d)
		}
	}
}

// topicCode is the code of a topic, named or (byID) by id, for op: a
// name the proxy's metadata does not know for the id answers
// UNKNOWN_TOPIC_ID (and refreshes the metadata), as the client would
// hear from a broker that does not know it: a topic the proxy cannot
// name is never forwarded unchecked.
func (s *Server) topicCode(c authz.Access, op kmsg.ACLOperation, name string, id [16]byte, byID bool) int16 {
	if byID {
		var ok bool
		if name, ok = s.cl.TopicName(id); !ok {
			s.cl.Refresh()
			return kerr.UnknownTopicID.Code
		}
	}
	return c.TopicCode(op, name)
}
