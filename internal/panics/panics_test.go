package panics

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestReportOncePerSitePerMinute(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	defer SetForTest(&buf, func() time.Time { return clock })()

	write("purgatory fetch: OnComplete", "boom", []byte("goroutine 7 [running]:\nmain.f()"))
	assert.Contains(t, buf.String(), "purgatory fetch: OnComplete panicked: boom")
	assert.Contains(t, buf.String(), "goroutine 7 [running]:", "with its stack")

	buf.Reset()
	for range 3 {
		Report(nil, "purgatory fetch: OnComplete", "boom")
	}
	Report(nil, "timer: task", "other")
	assert.Equal(t, 1, strings.Count(buf.String(), "panicked"), "the same site within the minute is counted, another site is written")
	assert.Contains(t, buf.String(), "timer: task panicked: other")

	buf.Reset()
	clock = clock.Add(time.Minute)
	Report(nil, "purgatory fetch: OnComplete", "again")
	assert.Contains(t, buf.String(), "panicked: again (and 3 more at this site since the last report)")
}
