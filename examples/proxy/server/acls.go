package server

// The proxy's bindings are the upstream cluster's: the proxy reads them
// with DescribeAcls (every binding: a filter of ANY), as its own
// principal, at start and every acl.refresh.ms, and loads them into its
// authorizer (package acl, the broker's), against which each client's
// request is checked (authz.go). The proxy's principal needs DESCRIBE on
// the upstream CLUSTER for it.
//
// # Failing closed
//
// Until an answer is loaded, the authorizer the checks see is a closed
// one: super users only (authz.go). The proxy asks again every
// reconnect.backoff.max.ms until one is. Then:
//
//   - an answer with an error, SECURITY_DISABLED (upstream has no
//     authorizer: there are no bindings to follow) or
//     CLUSTER_AUTHORIZATION_FAILED (the proxy's principal may not
//     DESCRIBE the cluster), or a binding the authorizer refuses (a
//     resource type it does not know, say), closes it again: the proxy
//     cannot know what its clients may do, and denies them all but the
//     super users. It is logged, at error, once per new reason;
//   - a request that fails in transport (upstream away, timed out)
//     keeps the bindings last loaded, and is logged at warn: a revoked
//     binding then holds until upstream answers again.
//
// A binding revoked upstream stops allowing at the proxy within
// acl.refresh.ms, and a binding made upstream allows there within as
// long.

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/internal/acl"
	"github.com/gopurgatory/purgatory/examples/proxy/upstream"
)

// aclFollower keeps the proxy's authorizer the upstream cluster's
// bindings. The checks read the authorizer with authorizer, from any
// goroutine; one goroutine (follow) writes.
type aclFollower struct {
	log    *zap.Logger
	closed *acl.Authorizer // immutable: super users, no binding, nothing else allowed
	loaded *acl.Authorizer // immutable pointer: the bindings last loaded

	// current is closed or loaded: what the checks use.
	current atomic.Pointer[acl.Authorizer]

	mu      sync.Mutex // guards the following
	problem string     // the last reason logged for failing closed, "" once loaded
}

// newACLFollower returns a follower whose authorizer is closed until
// the first load. opts are the authorizer's (authz.Options).
func newACLFollower(opts []acl.Option, log *zap.Logger) (*aclFollower, error) {
	loaded, err := acl.New(opts...)
	if err != nil {
		return nil, err
	}
	// The closed authorizer: the same super users, and no binding to
	// apply with allow.everyone.if.no.acl.found off, so the rest is
	// denied.
	closed, err := acl.New(append(opts[:len(opts):len(opts)], acl.WithAllowEveryoneIfNoACLFound(false))...)
	if err != nil {
		return nil, err
	}
	f := &aclFollower{log: log, closed: closed, loaded: loaded, problem: "not loaded yet"}
	f.current.Store(closed)
	return f, nil
}

// authorizer returns the authorizer the checks use now. O(1), no lock.
func (f *aclFollower) authorizer() *acl.Authorizer { return f.current.Load() }

// apply takes in an answer to DescribeAcls (or the error of its request)
// and reports whether the bindings are loaded now.
func (f *aclFollower) apply(resp *kmsg.DescribeACLsResponse, err error) bool {
	if err != nil {
		f.log.Warn("reading the upstream ACL bindings failed; the last loaded (if any) stay", zap.Error(err))
		return f.authorizer() == f.loaded
	}
	if resp.ErrorCode != 0 {
		err = kerr.ErrorForCode(resp.ErrorCode)
		msg := ""
		if resp.ErrorMessage != nil {
			msg = *resp.ErrorMessage
		}
		reason := fmt.Sprintf("upstream refused DescribeAcls: %v %s", err, msg)
		switch resp.ErrorCode {
		case kerr.SecurityDisabled.Code:
			reason += " (upstream has no authorizer: there are no bindings to follow)"
		case kerr.ClusterAuthorizationFailed.Code:
			reason += " (the proxy's upstream principal needs DESCRIBE on the CLUSTER)"
		}
		f.close(reason)
		return false
	}
	var bindings []acl.Binding
	for _, r := range resp.Resources {
		for _, a := range r.ACLs {
			bindings = append(bindings, acl.Binding{ResourceType: r.ResourceType, ResourceName: r.ResourceName,
				PatternType: r.ResourcePatternType, Principal: a.Principal, Host: a.Host, Operation: a.Operation,
				Permission: a.PermissionType})
		}
	}
	if err := f.loaded.Replace(bindings); err != nil {
		f.close(fmt.Sprintf("an upstream ACL binding cannot be loaded: %v", err))
		return false
	}
	f.current.Store(f.loaded)
	f.mu.Lock()
	first := f.problem != ""
	f.problem = ""
	f.mu.Unlock()
	if first {
		f.log.Info("following the upstream ACL bindings: clients are authorized", zap.Int("bindings", f.loaded.Len()))
	}
	return true
}

// close makes the checks deny everyone but the super users, and logs why
// when the reason is new.
func (f *aclFollower) close(reason string) {
	f.current.Store(f.closed)
	f.mu.Lock()
	changed := f.problem != reason
	f.problem = reason
	f.mu.Unlock()
	if changed {
		f.log.Error("client authorization fails closed: every client but the super users is denied", zap.String("reason", reason))
	}
}

// errNoDescribeACLs is why the bindings cannot be read from an upstream
// that does not serve DescribeAcls with pattern types (v1+).
var errNoDescribeACLs = errors.New("upstream does not serve DescribeAcls v1+")

// followACLs loads the upstream bindings at start, every acl.refresh.ms,
// and every reconnect.backoff.max.ms until loaded, until stop is closed.
func (s *Server) followACLs(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-stop:
			return
		case <-timer.C:
		}
		wait := s.cfg.ACLRefresh
		if !s.loadACLs(stop) {
			wait = min(wait, s.cfg.ReconnectBackoffMax)
		}
		timer.Reset(wait)
	}
}

// loadACLs reads the bindings once, and reports whether they are loaded.
func (s *Server) loadACLs(stop <-chan struct{}) bool {
	type answer struct {
		resp kmsg.Response
		err  error
	}
	got := make(chan answer, 1) // the callbacks never block
	versions := make(chan upstream.Versions, 1)
	s.cl.Versions(func(vs upstream.Versions, err error) {
		if err != nil {
			got <- answer{err: err}
			return
		}
		versions <- vs
	})
	select {
	case <-stop:
		return false
	case a := <-got:
		return s.acls.apply(nil, a.err)
	case vs := <-versions:
		v := vs.Max(kmsg.DescribeACLs)
		if v < 1 {
			return s.acls.apply(nil, errNoDescribeACLs)
		}
		req := kmsg.NewPtrDescribeACLsRequest()
		req.SetVersion(v)
		req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		s.cl.Send(s.cl.Any(), req, func(resp kmsg.Response, err error) { got <- answer{resp, err} })
	}
	select {
	case <-stop:
		return false
	case a := <-got:
		if a.err != nil {
			return s.acls.apply(nil, a.err)
		}
		return s.acls.apply(a.resp.(*kmsg.DescribeACLsResponse), nil)
	}
}
