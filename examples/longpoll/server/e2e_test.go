package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/operation"
)

// The end-to-end tests run the service on a loopback port, on the real
// clock, and drive it with real HTTP clients. A GET is known to wait when
// its handler reports it parked, never after a sleep.

func TestE2EWaiterWokenByPost(t *testing.T) {
	o := newObserved(t, Default())
	url, c := o.live(t)

	got := goDo(t.Context(), c, http.MethodGet, url+"/v1/keys/greeting?after=0&timeout=30s", "")
	o.awaitParked(t, 1)
	posted := do(t.Context(), c, http.MethodPost, url+"/v1/keys/greeting", "hello")
	require.NoError(t, posted.err)
	assert.Equal(t, http.StatusOK, posted.code, posted.body)
	assert.JSONEq(t, `{"key":"greeting","version":1}`, posted.body)
	assert.Equal(t, "1", posted.version)

	r := <-got
	require.NoError(t, r.err)
	assert.Equal(t, http.StatusOK, r.code)
	assert.Equal(t, "hello", r.body)
	assert.Equal(t, "1", r.version, "the version to pass back as after")
	assert.Equal(t, answer{"greeting", operation.Completed}, o.awaitAnswered(t))
	o.settle(t, 0)
}

func TestE2EWaiterTimesOutWithNothingNew(t *testing.T) {
	o := newObserved(t, Default())
	url, c := o.live(t)

	// Nothing is ever posted, so the only answer is at the timeout: the
	// 50ms decide when it comes, not what it is.
	r := do(t.Context(), c, http.MethodGet, url+"/v1/keys/quiet?timeout=50ms", "")
	require.NoError(t, r.err)
	assert.Equal(t, http.StatusNoContent, r.code)
	assert.Equal(t, "0", r.version, "a key never posted is at version 0")
	assert.Equal(t, answer{"quiet", operation.Expired}, o.awaitAnswered(t))

	// Past a version the key already has: nothing new either.
	require.NoError(t, do(t.Context(), c, http.MethodPost, url+"/v1/keys/quiet", "v1").err)
	r = do(t.Context(), c, http.MethodGet, url+"/v1/keys/quiet?after=1&timeout=50ms", "")
	require.NoError(t, r.err)
	assert.Equal(t, http.StatusNoContent, r.code)
	assert.Equal(t, "1", r.version)
	assert.Empty(t, r.body)
}

func TestE2EClientDisconnectFreesItsWait(t *testing.T) {
	o := newObserved(t, Default())
	url, c := o.live(t)

	ctx, disconnect := context.WithCancel(t.Context())
	got := goDo(ctx, c, http.MethodGet, url+"/v1/keys/gone?timeout=1m", "")
	o.awaitParked(t, 1)
	require.Equal(t, 1, o.Pending())

	// The client gives up: its transport closes the connection, the
	// server cancels the request's context, and the context completes the
	// wait now, a minute before its timeout.
	disconnect()
	assert.ErrorIs(t, (<-got).err, context.Canceled)
	assert.Equal(t, answer{"gone", operation.ContextDone}, o.awaitAnswered(t))
	o.settle(t, 0)
	require.Eventually(t, func() bool { return o.completions(t, operation.ContextDone) == 1 }, bound, time.Millisecond,
		"the completions metric counts the wait as context_done")
}

func TestE2EManyWaitersOnOneKeyWokenByOnePost(t *testing.T) {
	const waiters = 50
	o := newObserved(t, Default())
	url, c := o.live(t)

	var got []<-chan reply
	for range waiters {
		got = append(got, goDo(t.Context(), c, http.MethodGet, url+"/v1/keys/news?timeout=30s", ""))
	}
	o.awaitParked(t, waiters)
	assert.Equal(t, waiters, o.Pending(), "each waiter counted once")

	require.NoError(t, do(t.Context(), c, http.MethodPost, url+"/v1/keys/news", "extra").err)
	for i, ch := range got {
		r := <-ch
		require.NoError(t, r.err, "waiter %d", i)
		assert.Equal(t, http.StatusOK, r.code, "waiter %d", i)
		assert.Equal(t, "extra", r.body, "waiter %d", i)
		assert.Equal(t, "1", r.version, "waiter %d", i)
	}
	o.settle(t, 0)
}

func TestE2EAfterAlreadyPassedAnswersAtOnce(t *testing.T) {
	o := newObserved(t, Default())
	url, c := o.live(t)
	for _, v := range []string{"first", "second"} {
		require.NoError(t, do(t.Context(), c, http.MethodPost, url+"/v1/keys/k", v).err)
	}

	tests := []struct {
		name, query string
	}{
		{name: "no after: any value", query: ""},
		{name: "after an older version", query: "?after=1&timeout=1m"},
		{name: "timeout 0, a plain poll", query: "?after=0&timeout=0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t.Context(), c, http.MethodGet, url+"/v1/keys/k"+tt.query, "")
			require.NoError(t, r.err)
			assert.Equal(t, http.StatusOK, r.code)
			assert.Equal(t, "second", r.body, "the newest value, not the next one")
			assert.Equal(t, "2", r.version)
		})
	}
	assert.Empty(t, o.parked, "no GET waited")
	assert.Zero(t, o.Pending())
}

func TestE2EShutdownAnswersWaiters(t *testing.T) {
	const waiters = 5
	o := newObserved(t, Default())
	url, c := o.live(t)

	var got []<-chan reply
	for i := range waiters {
		got = append(got, goDo(t.Context(), c, http.MethodGet, fmt.Sprintf("%s/v1/keys/k%d?timeout=1m", url, i), ""))
	}
	o.awaitParked(t, waiters)

	require.NoError(t, o.Shutdown(t.Context()))
	for i, ch := range got {
		r := <-ch
		require.NoError(t, r.err, "waiter %d", i)
		assert.Equal(t, http.StatusServiceUnavailable, r.code, "waiter %d", i)
		assert.Contains(t, r.body, "shutting down", "waiter %d", i)
	}
	assert.Zero(t, o.Pending())
	assert.Error(t, do(t.Context(), c, http.MethodGet, url+"/v1/keys/k0", "").err, "no longer listening")
}

func TestE2EBadInput(t *testing.T) {
	o := newObserved(t, small()) // values up to 16 bytes, timeouts up to 1m
	url, c := o.live(t)

	tests := []struct {
		name         string
		method, path string
		body         string
		code         int
		msg          string // in the answer's body
	}{
		{name: "GET without a key", method: http.MethodGet, path: "/v1/keys/", code: http.StatusBadRequest, msg: "missing key"},
		{name: "POST without a key", method: http.MethodPost, path: "/v1/keys/", body: "v", code: http.StatusBadRequest, msg: "missing key"},
		{name: "key too long", method: http.MethodGet, path: "/v1/keys/" + strings.Repeat("k", MaxKeyBytes+1), code: http.StatusBadRequest, msg: "longer than 256 bytes"},
		{name: "after not a number", method: http.MethodGet, path: "/v1/keys/k?after=x", code: http.StatusBadRequest, msg: `after="x"`},
		{name: "after negative", method: http.MethodGet, path: "/v1/keys/k?after=-1", code: http.StatusBadRequest, msg: "after"},
		{name: "timeout not a duration", method: http.MethodGet, path: "/v1/keys/k?timeout=30", code: http.StatusBadRequest, msg: "want a duration"},
		{name: "timeout negative", method: http.MethodGet, path: "/v1/keys/k?timeout=-1s", code: http.StatusBadRequest, msg: "want a duration"},
		{name: "timeout over the cap", method: http.MethodGet, path: "/v1/keys/k?timeout=2m", code: http.StatusBadRequest, msg: "more than the maximum, 1m0s"},
		{name: "value too large", method: http.MethodPost, path: "/v1/keys/k", body: strings.Repeat("v", 17), code: http.StatusRequestEntityTooLarge, msg: "larger than 16 bytes"},
		{name: "another method", method: http.MethodPut, path: "/v1/keys/k", body: "v", code: http.StatusMethodNotAllowed},
		{name: "another path", method: http.MethodGet, path: "/v2/keys/k", code: http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t.Context(), c, tt.method, url+tt.path, tt.body)
			require.NoError(t, r.err)
			assert.Equal(t, tt.code, r.code, r.body)
			assert.Contains(t, r.body, tt.msg)
		})
	}
	assert.Empty(t, o.parked, "no bad GET waited")
	assert.Zero(t, o.store.len(), "no bad POST stored")
}

func TestE2ETooManyWaiters(t *testing.T) {
	cfg := Default()
	cfg.MaxWaiters = 1
	o := newObserved(t, cfg)
	url, c := o.live(t)

	first := goDo(t.Context(), c, http.MethodGet, url+"/v1/keys/k?timeout=1m", "")
	o.awaitParked(t, 1)
	r := do(t.Context(), c, http.MethodGet, url+"/v1/keys/k?timeout=1m", "")
	require.NoError(t, r.err)
	assert.Equal(t, http.StatusServiceUnavailable, r.code)
	assert.Contains(t, r.body, "too many requests waiting (at most 1)")
	assert.Equal(t, answer{"k", operation.Rejected}, o.awaitAnswered(t))

	// The one waiting is unaffected.
	require.NoError(t, do(t.Context(), c, http.MethodPost, url+"/v1/keys/k", "v").err)
	assert.Equal(t, "v", (<-first).body)
}

func TestE2ETooManyKeys(t *testing.T) {
	cfg := Default()
	cfg.MaxKeys = 1
	o := newObserved(t, cfg)
	url, c := o.live(t)

	assert.Equal(t, http.StatusOK, do(t.Context(), c, http.MethodPost, url+"/v1/keys/a", "1").code)
	r := do(t.Context(), c, http.MethodPost, url+"/v1/keys/b", "1")
	assert.Equal(t, http.StatusInsufficientStorage, r.code)
	assert.Contains(t, r.body, "1 keys stored already")
	assert.Equal(t, http.StatusOK, do(t.Context(), c, http.MethodPost, url+"/v1/keys/a", "2").code, "a stored key takes new versions")
}

func TestE2EStatsAndMetrics(t *testing.T) {
	o := newObserved(t, Default())
	url, c := o.live(t)

	require.NoError(t, do(t.Context(), c, http.MethodPost, url+"/v1/keys/a", "1").err)
	waiting := goDo(t.Context(), c, http.MethodGet, url+"/v1/keys/a?after=1&timeout=1m", "")
	o.awaitParked(t, 1)

	stats := do(t.Context(), c, http.MethodGet, url+"/v1/stats", "")
	require.NoError(t, stats.err)
	assert.JSONEq(t, `{"pending":1,"keys":1}`, stats.body)
	metrics := do(t.Context(), c, http.MethodGet, url+"/metrics", "")
	require.NoError(t, metrics.err)
	assert.Contains(t, metrics.body, `purgatory_operations_pending{purgatory="longpoll"} 1`)
	assert.Contains(t, metrics.body, "go_goroutines", "the runtime's metrics too")

	require.NoError(t, do(t.Context(), c, http.MethodPost, url+"/v1/keys/a", "2").err)
	assert.Equal(t, "2", (<-waiting).body)
}

func TestE2ESlowBodyIsCutShort(t *testing.T) {
	o := newObserved(t, Default())
	o.bodyTimeout = 50 * time.Millisecond // before serving
	url, _ := o.live(t)

	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	// 3 of the 10 bytes promised, then nothing: only the server's
	// deadline answers, so the verdict does not depend on the 50ms.
	_, err = io.WriteString(conn, "POST /v1/keys/k HTTP/1.1\r\nHost: longpoll\r\nContent-Length: 10\r\n\r\nabc")
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(bound)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	assert.Contains(t, string(body), "value not read within 50ms")
	assert.Zero(t, o.store.len())
}
