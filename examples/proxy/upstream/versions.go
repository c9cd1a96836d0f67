package upstream

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// VersionRange is the versions of one API a broker serves.
type VersionRange struct{ Min, Max int16 }

// Versions maps an API key to the versions every upstream broker
// handshaken so far serves; a key absent is served by none.
type Versions map[int16]VersionRange

// max returns the highest version of key served, capped at limit, or -1.
func (vs Versions) max(key kmsg.Key, limit int16) int16 {
	r, ok := vs[int16(key)]
	if !ok {
		return -1
	}
	return min(r.Max, limit)
}

// Max returns the highest version of key every broker serves, capped at
// what kmsg knows, or -1 when some broker does not serve it.
func (vs Versions) Max(key kmsg.Key) int16 {
	return vs.max(key, kmsg.RequestForKey(int16(key)).MaxVersion())
}

// Versions calls done with the versions every broker handshaken serves: at
// once when known, else after the next handshake, with its error if it
// fails. done must not block.
func (cl *Cluster) Versions(done func(Versions, error)) {
	cl.mu.Lock()
	if cl.closed {
		cl.mu.Unlock()
		done(nil, ErrClosed)
		return
	}
	if cl.versions != nil {
		vs := cl.versions
		cl.mu.Unlock()
		done(vs, nil)
		return
	}
	cl.waiters = append(cl.waiters, done)
	cl.mu.Unlock()
	cl.Refresh()
}

// KnownVersions returns the versions every broker handshaken serves, or
// nil before the first handshake.
func (cl *Cluster) KnownVersions() Versions {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.versions
}

// handshake asks c's broker for its API versions, unless asked before, and
// returns the versions every broker handshaken serves.
func (cl *Cluster) handshake(c *Conn) (Versions, error) {
	cl.mu.Lock()
	done, vs := cl.handshaken[c.addr], cl.versions
	cl.mu.Unlock()
	if done && vs != nil {
		return vs, nil
	}
	resp, err := c.Do(cl.ctx, apiVersionsRequest(3))
	if err != nil && errors.Is(err, ErrProtocol) {
		// A broker older than v3 answers in v0, which does not decode as
		// v3, and the connection is gone: ask again in v0 on a new one.
		if c, err = cl.ownConn(c.node); err != nil {
			return nil, err
		}
		resp, err = c.Do(cl.ctx, apiVersionsRequest(0))
	} else if err == nil && resp.(*kmsg.ApiVersionsResponse).ErrorCode == kerr.UnsupportedVersion.Code {
		resp, err = c.Do(cl.ctx, apiVersionsRequest(0))
	}
	if err != nil {
		return nil, err
	}
	return cl.addVersions(c, resp.(*kmsg.ApiVersionsResponse))
}

// handshakeAsync is handshake without waiting: its result only narrows the
// versions.
func (cl *Cluster) handshakeAsync(c *Conn) {
	c.Send(apiVersionsRequest(3), func(resp kmsg.Response, err error) {
		if err != nil {
			return // the next refresh tries again
		}
		r := resp.(*kmsg.ApiVersionsResponse)
		if r.ErrorCode == kerr.UnsupportedVersion.Code {
			c.Send(apiVersionsRequest(0), func(resp kmsg.Response, err error) {
				if err == nil {
					_, _ = cl.addVersions(c, resp.(*kmsg.ApiVersionsResponse))
				}
			})
			return
		}
		_, _ = cl.addVersions(c, r)
	})
}

func apiVersionsRequest(version int16) *kmsg.ApiVersionsRequest {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(version)
	req.ClientSoftwareName = "purgatory-proxy"
	req.ClientSoftwareVersion = "0.1.0"
	return req
}

// addVersions narrows the versions to those c's broker serves too.
func (cl *Cluster) addVersions(c *Conn, resp *kmsg.ApiVersionsResponse) (Versions, error) {
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("api versions from broker %d: %w", c.node, err)
	}
	theirs := make(Versions, len(resp.ApiKeys))
	for _, k := range resp.ApiKeys {
		theirs[k.ApiKey] = VersionRange{k.MinVersion, k.MaxVersion}
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.handshaken[c.addr] = true
	if cl.versions == nil {
		cl.versions = theirs
	} else {
		both := make(Versions, len(cl.versions))
		for k, r := range cl.versions {
			t, ok := theirs[k]
			if !ok {
				continue
			}
			if lo, hi := max(r.Min, t.Min), min(r.Max, t.Max); lo <= hi {
				both[k] = VersionRange{lo, hi}
			}
		}
		cl.versions = both
	}
	cl.log.Debug("upstream api versions", zap.Int32("node", c.node), zap.String("addr", c.addr), zap.Int("apis", len(theirs)))
	return cl.versions, nil
}
