package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/timer"
)

// bound is how long a test waits for something that takes microseconds
// (a handler to park, a count to settle). It only bounds a failing test;
// no verdict depends on it.
const bound = 5 * time.Second

// answer is what the answered hook saw: a wait's key and outcome.
type answer struct {
	key     string
	outcome operation.Outcome
}

// observed is a Server whose test hooks report to channels, so that a test
// waits for "the GET is parked" or "the wait completed" instead of
// sleeping.
type observed struct {
	*Server
	parked   chan string
	answered chan answer
}

// newObserved returns a Server with cfg, its hooks on, logging to t and
// shut down at the end of the test.
func newObserved(t *testing.T, cfg Config) *observed {
	t.Helper()
	s, err := New(cfg, zaptest.NewLogger(t))
	require.NoError(t, err)
	o := &observed{Server: s, parked: make(chan string, 1024), answered: make(chan answer, 1024)}
	s.hooks.parked = func(key string) { o.parked <- key }
	s.hooks.answered = func(key string, out operation.Outcome) { o.answered <- answer{key, out} }
	t.Cleanup(func() { require.NoError(t, s.Shutdown(context.Background())) })
	return o
}

// newManual returns an observed Server on a manual clock: a wait expires
// only inside clk.Advance, on the test's goroutine.
func newManual(t *testing.T, cfg Config) (*observed, *timer.ManualClock) {
	t.Helper()
	clk := timer.NewManualClock(0)
	cfg.Clock = clk
	return newObserved(t, cfg), clk
}

// awaitParked waits until n GETs have parked, and returns their keys.
func (o *observed) awaitParked(t *testing.T, n int) []string {
	t.Helper()
	keys := make([]string, 0, n)
	for range n {
		select {
		case k := <-o.parked:
			keys = append(keys, k)
		case <-time.After(bound):
			require.FailNow(t, "GETs not parked", "%d of %d parked", len(keys), n)
		}
	}
	return keys
}

// awaitAnswered waits for the next wait to complete and returns it.
func (o *observed) awaitAnswered(t *testing.T) answer {
	t.Helper()
	select {
	case a := <-o.answered:
		return a
	case <-time.After(bound):
		require.FailNow(t, "no wait completed")
		return answer{}
	}
}

// settle waits for Pending to reach want. The purgatory closes a wait's
// Done channel as soon as its callbacks ran, and counts the wait answered
// (Pending, the completions metric) just after: a handler woken by Done
// may see itself still counted, for an instant.
func (o *observed) settle(t *testing.T, want int) {
	t.Helper()
	require.Eventually(t, func() bool { return o.Pending() == want }, bound, time.Millisecond,
		"Pending() never reached %d", want)
}

// completions returns the purgatory's completions_total for outcome.
func (o *observed) completions(t *testing.T, outcome operation.Outcome) float64 {
	t.Helper()
	families, err := o.reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "purgatory_completions_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome.String() {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// live serves o on a loopback port; it returns the base URL and a client
// whose connections close at the end of the test.
func (o *observed) live(t *testing.T) (string, *http.Client) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- o.Serve(ln) }()
	tr := &http.Transport{MaxIdleConnsPerHost: 256}
	t.Cleanup(func() {
		require.NoError(t, o.Shutdown(context.Background())) // again in newObserved's cleanup: idempotent
		require.NoError(t, <-served)
		tr.CloseIdleConnections()
	})
	return "http://" + ln.Addr().String(), &http.Client{Transport: tr, Timeout: bound}
}

// reply is an HTTP answer read whole.
type reply struct {
	code    int
	version string // the Key-Version header
	body    string
	err     error // the client's, when there is no answer
}

// do sends a request and reads the answer whole.
func do(ctx context.Context, c *http.Client, method, url, body string) reply {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return reply{err: err}
	}
	resp, err := c.Do(req)
	if err != nil {
		return reply{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{code: resp.StatusCode, version: resp.Header.Get(versionHeader), body: string(b), err: err}
}

// goDo sends a request on a goroutine of its own; its reply comes on the
// channel returned.
func goDo(ctx context.Context, c *http.Client, method, url, body string) <-chan reply {
	ch := make(chan reply, 1)
	go func() { ch <- do(ctx, c, method, url, body) }()
	return ch
}

// serve runs a request through o's handler, with no network: the unit
// tests' way in. It returns at once; the recorder is complete when the
// channel is closed.
func (o *observed) serve(ctx context.Context, method, target, body string) (*httptest.ResponseRecorder, <-chan struct{}) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequestWithContext(ctx, method, target, strings.NewReader(body))
	done := make(chan struct{})
	go func() {
		defer close(done)
		o.Handler().ServeHTTP(rec, req)
	}()
	return rec, done
}

// await waits for a request started by serve to be answered.
func await(t *testing.T, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(bound):
		require.FailNow(t, "the handler did not return")
	}
}

// small returns the default settings with bounds small enough to reach.
func small() Config {
	cfg := Default()
	cfg.MaxValueBytes = 16
	return cfg
}
