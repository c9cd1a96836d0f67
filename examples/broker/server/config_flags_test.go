package server

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFlagsSayTheirDefaultOnce: -h lists each config with its default
// said once, and none with an empty "(default )".
func TestFlagsSayTheirDefaultOnce(t *testing.T) {
	cfg := Default()
	fs := flag.NewFlagSet("broker", flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	cfg.RegisterFlags(fs)
	fs.PrintDefaults()
	assert.NotContains(t, out.String(), "(default )")
	fs.VisitAll(func(f *flag.Flag) {
		assert.LessOrEqual(t, strings.Count(f.Usage, "default"), 1, "--%s: %q", f.Name, f.Usage)
	})
	assert.Contains(t, out.String(), "partitions of an auto-created topic (default 1)")
}
