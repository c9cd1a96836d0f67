package server

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// decodeBudget bounds how long decoding one request body may take: far above
// what a real request needs (a 100 MiB produce decodes in milliseconds: the
// records stay bytes), far below the minute a forged one can cost.
const decodeBudget = 2 * time.Second

// decoder decodes a request body; it is kmsg's ReadFrom, replaced in tests.
type decoder func(kreq kmsg.Request, src []byte) error

func readFrom(kreq kmsg.Request, src []byte) error { return kreq.ReadFrom(src) }

// decode decodes a request body, under a budget for flexible versions.
//
// kmsg's decoders (v1.15.0, the newest there is) read each flexible struct's
// tag count and loop that many times even after the input has run out: a
// forged count in a 34-byte Fetch costs about a minute of CPU, and the loop
// cannot be interrupted. So a flexible body is decoded on a goroutine of its
// own: past the budget the connection is closed at once, its reader is free,
// and the broker's shutdown never waits for it, while the abandoned decode
// finishes alone. Versions before flexible ones have no tag loops and are
// decoded here. (The fix belongs upstream: stop the loops when the reader
// fails, as kbin's readers report.)
func (c *conn) decode(kreq kmsg.Request, src []byte) error {
	if !kreq.IsFlexible() {
		return c.s.decode(kreq, src)
	}
	done := make(chan error, 1)
	go func() { done <- c.s.decode(kreq, src) }()
	if c.budget == nil {
		c.budget = time.NewTimer(c.s.decodeBudget)
	} else {
		c.budget.Reset(c.s.decodeBudget)
	}
	select {
	case err := <-done:
		c.budget.Stop()
		return err
	case <-c.budget.C:
		c.s.metrics.decodeOverruns.Inc()
		return fmt.Errorf("%w: decoding took over %v (a forged count in a tagged-field section?)", errBadRequest, c.s.decodeBudget)
	}
}
