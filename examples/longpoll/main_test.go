package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// bound only bounds a failing test; no verdict depends on it.
const bound = 5 * time.Second

// TestRunServesAndShutsDownGracefully runs the command as `go run` does,
// on a free port: a GET waits, and the signal (ctx) answers it 503 before
// run returns.
func TestRunServesAndShutsDownGracefully(t *testing.T) {
	ctx, signal := context.WithCancel(t.Context())
	stdout, w := io.Pipe()
	ran := make(chan error, 1)
	go func() {
		ran <- run(ctx, []string{"--listen", "127.0.0.1:0"}, w, io.Discard)
		w.Close()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	_, rest, ok := strings.Cut(line, "listening on ")
	require.True(t, ok, "first line: %q", line)
	url, _, _ := strings.Cut(rest, " ")

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: bound}
	got := make(chan *http.Response, 1)
	go func() {
		resp, err := c.Get(url + "/v1/keys/k?timeout=1m")
		assert.NoError(t, err)
		got <- resp
	}()
	// The command's tests see only its HTTP API: poll its stats until the
	// GET waits (bounded; each poll answers at once).
	require.Eventually(t, func() bool {
		resp, err := c.Get(url + "/v1/stats")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var stats struct{ Pending int }
		return json.NewDecoder(resp.Body).Decode(&stats) == nil && stats.Pending == 1
	}, bound, time.Millisecond)

	signal()
	select {
	case resp := <-got:
		require.NotNil(t, resp)
		resp.Body.Close()
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	case <-time.After(bound):
		require.FailNow(t, "the waiting GET was not answered")
	}
	require.NoError(t, <-ran)
}

func TestRunFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		err  error  // errors.Is
		msg  string // in the error, or in the output for --help
	}{
		{name: "help", args: []string{"--help"}, err: flag.ErrHelp, msg: "GET  /v1/keys/{key}?after=N&timeout=D"},
		{name: "unknown flag", args: []string{"--nope"}, msg: "flag provided but not defined"},
		{name: "argument", args: []string{"extra"}, msg: `unexpected argument "extra"`},
		{name: "log level", args: []string{"--log-level", "loud"}, msg: "--log-level"},
		{name: "config", args: []string{"--max-timeout", "0s"}, msg: "max timeout"},
		{name: "listen", args: []string{"--listen", "127.0.0.1:99999"}, msg: "invalid port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			err := run(t.Context(), tt.args, io.Discard, &out)
			require.Error(t, err)
			if tt.err != nil {
				assert.ErrorIs(t, err, tt.err)
				assert.Contains(t, out.String(), tt.msg)
				return
			}
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}
