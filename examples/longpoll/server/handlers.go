package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/purgatory"
)

// versionHeader carries a key's version in every answer about the key:
// what a client passes back as ?after= to wait for the next one.
const versionHeader = "Key-Version"

// get answers GET /v1/keys/{key}?after=N&timeout=D: the value if the key
// is past N, else once a POST moves it past N or the timeout passes.
func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	key, ok := s.key(w, r)
	if !ok {
		return
	}
	after, timeout, err := s.waitParams(r.URL.Query())
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	op := &wait{store: s.store, key: key, after: after}
	// Tied to the request's context: a client that disconnects completes
	// op at once (ContextDone), so it holds no place under MaxWaiters and
	// no memory until its timeout.
	done, err := s.waits.TryCompleteElseWatchContext(r.Context(), op, timeout, key)
	switch {
	case errors.Is(err, purgatory.ErrClosed):
		unavailable(w, "shutting down")
		return
	case err != nil:
		// By the purgatory's rule for errors op was not taken; the only
		// other error is the context's: the client left before it waited.
		s.log.Debug("client gone before waiting", zap.String("key", key), zap.Error(err))
		return
	}
	if !done && s.hooks.parked != nil {
		s.hooks.parked(key)
	}
	// Bounded: op completes by its timeout at the latest, or earlier by a
	// POST, its client leaving, or Shutdown.
	<-op.Done()
	s.reply(w, op)
}

// reply writes the answer op's completion decided. It runs on the GET's
// own goroutine, after op's callbacks: no purgatory goroutine ever waits
// on a client's socket.
func (s *Server) reply(w http.ResponseWriter, op *wait) {
	out, e := op.Outcome(), op.answer
	// The purgatory may keep a completed wait listed under its key until a
	// check of the key or a purge: let it not keep the value too.
	op.answer = entry{}
	if s.hooks.answered != nil {
		s.hooks.answered(op.key, out)
	}
	switch out {
	case operation.Completed, operation.Expired:
		w.Header().Set(versionHeader, strconv.FormatUint(e.version, 10))
		if e.version <= op.after {
			w.WriteHeader(http.StatusNoContent) // nothing new within the timeout
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(e.value)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(e.value)
	case operation.Closed:
		unavailable(w, "shutting down")
	case operation.Rejected:
		unavailable(w, fmt.Sprintf("too many requests waiting (at most %d)", s.cfg.MaxWaiters))
	case operation.ContextDone:
		// The client went away: nobody reads an answer.
		s.log.Debug("client gone while waiting", zap.String("key", op.key))
	default:
		// No other outcome reaches a wait (nothing forces or cancels it).
		s.log.Error("unexpected outcome", zap.String("key", op.key), zap.Stringer("outcome", out))
		httpError(w, http.StatusInternalServerError, "unexpected outcome "+out.String())
	}
}

// post answers POST /v1/keys/{key}: the body becomes the key's next
// version, and the key's waiters are woken.
func (s *Server) post(w http.ResponseWriter, r *http.Request) {
	key, ok := s.key(w, r)
	if !ok {
		return
	}
	// MaxBytesReader also tells the server to close the connection after
	// a body too large, instead of reading the rest of it.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.bodyTimeout))
	value, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxValueBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("value larger than %d bytes", tooBig.Limit))
		case errors.Is(err, os.ErrDeadlineExceeded):
			httpError(w, http.StatusRequestTimeout, fmt.Sprintf("value not read within %v", s.bodyTimeout))
		default:
			httpError(w, http.StatusBadRequest, "reading the value: "+err.Error())
		}
		return
	}
	version, err := s.store.put(key, value)
	if err != nil {
		httpError(w, http.StatusInsufficientStorage, fmt.Sprintf("%d keys stored already", s.cfg.MaxKeys))
		return
	}
	// The event: with the store's lock released (lock order), every wait
	// under the key is tried and those past their version completed, their
	// handlers woken. The count is how many this call answered.
	woken := s.waits.CheckAndComplete(key)
	s.log.Debug("stored", zap.String("key", key), zap.Uint64("version", version), zap.Int("woken", woken))
	w.Header().Set(versionHeader, strconv.FormatUint(version, 10))
	writeJSON(w, struct {
		Key     string `json:"key"`
		Version uint64 `json:"version"`
	}{key, version})
}

// stats answers GET /v1/stats.
func (s *Server) stats(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, struct {
		Pending int `json:"pending"` // GETs waiting
		Keys    int `json:"keys"`    // keys stored
	}{s.waits.Pending(), s.store.len()})
}

// key returns the request's key, or answers 400 and reports false.
func (s *Server) key(w http.ResponseWriter, r *http.Request) (string, bool) {
	key := r.PathValue("key")
	switch {
	case key == "":
		httpError(w, http.StatusBadRequest, "missing key: /v1/keys/{key}")
		return "", false
	case len(key) > MaxKeyBytes:
		// Not echoed: an error message never repeats unbounded input.
		httpError(w, http.StatusBadRequest, fmt.Sprintf("key longer than %d bytes", MaxKeyBytes))
		return "", false
	}
	return key, true
}

// waitParams parses a GET's after and timeout, with their defaults.
func (s *Server) waitParams(q url.Values) (after uint64, timeout time.Duration, err error) {
	if v := q.Get("after"); v != "" {
		if after, err = strconv.ParseUint(v, 10, 64); err != nil {
			return 0, 0, fmt.Errorf("after=%.32q: want a version, 0 or more", v)
		}
	}
	timeout = s.cfg.DefaultTimeout
	if v := q.Get("timeout"); v != "" {
		if timeout, err = time.ParseDuration(v); err != nil || timeout < 0 {
			return 0, 0, fmt.Errorf("timeout=%.32q: want a duration such as 30s, 0 or more", v)
		}
		if timeout > s.cfg.MaxTimeout {
			return 0, 0, fmt.Errorf("timeout=%v: more than the maximum, %v", timeout, s.cfg.MaxTimeout)
		}
	}
	return after, timeout, nil
}

// httpError answers code with a one-line message.
func httpError(w http.ResponseWriter, code int, msg string) {
	http.Error(w, "longpoll: "+msg, code)
}

// unavailable answers 503: the client may retry (after a second).
func unavailable(w http.ResponseWriter, msg string) {
	w.Header().Set("Retry-After", "1")
	httpError(w, http.StatusServiceUnavailable, msg)
}

// writeJSON answers 200 with v as JSON.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
