package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/operation"
)

// The unit tests run the handlers without a network, on a manual clock:
// a wait expires inside clk.Advance, on the test's goroutine, so "not
// yet" and "now" are exact.

func TestWaitExpiresAtItsTimeout(t *testing.T) {
	o, clk := newManual(t, Default())
	rec, done := o.serve(t.Context(), http.MethodGet, "/v1/keys/k?timeout=30s", "")
	o.awaitParked(t, 1)

	clk.Advance(30*time.Second - time.Millisecond)
	assert.Empty(t, o.answered, "not answered before its timeout")
	assert.Equal(t, 1, o.Pending())

	clk.Advance(time.Millisecond)
	assert.Equal(t, answer{"k", operation.Expired}, o.awaitAnswered(t))
	await(t, done)
	assert.Equal(t, http.StatusNoContent, rec.Code)
	assert.Equal(t, "0", rec.Header().Get(versionHeader))
}

func TestWaitWithoutTimeoutUsesTheDefault(t *testing.T) {
	cfg := Default()
	cfg.DefaultTimeout = 5 * time.Second
	o, clk := newManual(t, cfg)
	_, done := o.serve(t.Context(), http.MethodGet, "/v1/keys/k", "")
	o.awaitParked(t, 1)

	clk.Advance(5*time.Second - time.Millisecond)
	assert.Empty(t, o.answered)
	clk.Advance(time.Millisecond)
	assert.Equal(t, answer{"k", operation.Expired}, o.awaitAnswered(t))
	await(t, done)
}

func TestWaitCompletedByPostBeforeItsTimeout(t *testing.T) {
	o, clk := newManual(t, Default())
	rec, done := o.serve(t.Context(), http.MethodGet, "/v1/keys/k?after=0&timeout=30s", "")
	o.awaitParked(t, 1)
	clk.Advance(10 * time.Second)

	post, posted := o.serve(t.Context(), http.MethodPost, "/v1/keys/k", "v1")
	await(t, posted)
	require.Equal(t, http.StatusOK, post.Code, post.Body.String())
	assert.Equal(t, answer{"k", operation.Completed}, o.awaitAnswered(t))
	await(t, done)
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "v1", rec.Body.String())
	assert.Equal(t, "1", rec.Header().Get(versionHeader))
	assert.Equal(t, "application/octet-stream", rec.Header().Get("Content-Type"))

	clk.Advance(time.Minute) // its deadline left the timer with it
	assert.Empty(t, o.answered, "answered once")
}

// A POST that stored its value when the wait's deadline passed, and has
// not yet checked the key: the expiry answers the value, not "nothing
// new", since OnComplete reads the store.
func TestExpiredWaitAnswersAValueStoredMeanwhile(t *testing.T) {
	o, clk := newManual(t, Default())
	rec, done := o.serve(t.Context(), http.MethodGet, "/v1/keys/k?timeout=1s", "")
	o.awaitParked(t, 1)

	_, err := o.store.put("k", []byte("late")) // the POST's store, without its CheckAndComplete yet
	require.NoError(t, err)
	clk.Advance(time.Second)
	assert.Equal(t, answer{"k", operation.Expired}, o.awaitAnswered(t))
	await(t, done)
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "late", rec.Body.String())
}

// Two waits on one key at different versions: a POST answers only the
// one it moves the key past.
func TestPostWakesOnlyTheWaitsItMovesPast(t *testing.T) {
	o, clk := newManual(t, Default())
	for _, v := range []string{"v1", "v2"} {
		_, err := o.store.put("k", []byte(v))
		require.NoError(t, err)
	}
	behind, behindDone := o.serve(t.Context(), http.MethodGet, "/v1/keys/k?after=2&timeout=10s", "")
	ahead, aheadDone := o.serve(t.Context(), http.MethodGet, "/v1/keys/k?after=3&timeout=10s", "")
	o.awaitParked(t, 2)

	_, posted := o.serve(t.Context(), http.MethodPost, "/v1/keys/k", "v3")
	await(t, posted)
	await(t, behindDone)
	assert.Equal(t, "v3", behind.Body.String())
	assert.Equal(t, "3", behind.Header().Get(versionHeader))
	assert.Equal(t, answer{"k", operation.Completed}, o.awaitAnswered(t), "only the wait behind")

	clk.Advance(10 * time.Second)
	await(t, aheadDone)
	assert.Equal(t, http.StatusNoContent, ahead.Code, "version 4 never came")
	assert.Equal(t, "3", ahead.Header().Get(versionHeader))
}

func TestClientGoneAnswersNothing(t *testing.T) {
	o, _ := newManual(t, Default())
	ctx, disconnect := context.WithCancel(t.Context())
	rec, done := o.serve(ctx, http.MethodGet, "/v1/keys/k?timeout=1m", "")
	o.awaitParked(t, 1)

	disconnect() // no clock moves: the context alone completes the wait
	assert.Equal(t, answer{"k", operation.ContextDone}, o.awaitAnswered(t))
	await(t, done)
	assert.False(t, rec.Flushed)
	assert.Empty(t, rec.Body.String(), "nothing written to a client that left")
	o.settle(t, 0)
}

func TestClientGoneBeforeWaiting(t *testing.T) {
	o, _ := newManual(t, Default())
	ctx, disconnect := context.WithCancel(t.Context())
	disconnect()
	rec, done := o.serve(ctx, http.MethodGet, "/v1/keys/k?timeout=1m", "")
	await(t, done)
	assert.Empty(t, o.parked, "refused by the purgatory: its context was done")
	assert.Empty(t, o.answered)
	assert.Empty(t, rec.Body.String())
	assert.Zero(t, o.Pending())
}

func TestGetAfterShutdownIsUnavailable(t *testing.T) {
	o, _ := newManual(t, Default())
	require.NoError(t, o.Shutdown(t.Context()))
	rec, done := o.serve(t.Context(), http.MethodGet, "/v1/keys/k?timeout=1m", "")
	await(t, done)
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, "1", rec.Header().Get("Retry-After"))
	assert.Contains(t, rec.Body.String(), "shutting down")
}

// A wait answered sheds its reference to the value: the purgatory may
// keep the completed operation listed until its next purge.
func TestReplyDropsTheValue(t *testing.T) {
	o, _ := newManual(t, Default())
	op := &wait{store: o.store, key: "k"}
	_, err := o.store.put("k", []byte("big"))
	require.NoError(t, err)
	done, err := o.waits.TryCompleteElseWatch(op, time.Minute, "k")
	require.NoError(t, err)
	require.True(t, done, "past version 0 already")

	o.reply(httptest.NewRecorder(), op)
	assert.Nil(t, op.answer.value)
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		msg    string
	}{
		{name: "defaults", change: func(*Config) {}},
		{name: "max timeout zero", change: func(c *Config) { c.MaxTimeout = 0 }, msg: "max timeout"},
		{name: "default past max", change: func(c *Config) { c.DefaultTimeout = 2 * c.MaxTimeout }, msg: "default timeout"},
		{name: "default negative", change: func(c *Config) { c.DefaultTimeout = -1 }, msg: "default timeout"},
		{name: "no waiters", change: func(c *Config) { c.MaxWaiters = 0 }, msg: "max waiters"},
		{name: "no keys", change: func(c *Config) { c.MaxKeys = 0 }, msg: "max keys"},
		{name: "no value bytes", change: func(c *Config) { c.MaxValueBytes = 0 }, msg: "max value bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Default()
			tt.change(&cfg)
			s, err := New(cfg, nil)
			if tt.msg == "" {
				require.NoError(t, err)
				require.NoError(t, s.Shutdown(t.Context()))
				return
			}
			require.ErrorIs(t, err, ErrInvalidConfig)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}
