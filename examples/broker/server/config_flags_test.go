package server

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// TestMemorySharesFlags: queued.max.request.bytes.per.connection and
// .per.ip are 0 (derived from the budget) by default, -1 or at least 1 KiB
// when set.
func TestMemorySharesFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr bool
	}{
		{"defaults", nil, false},
		{"set", []string{"--queued.max.request.bytes.per.connection=1048576", "--queued.max.request.bytes.per.ip=8388608"}, false},
		{"unbounded", []string{"--queued.max.request.bytes.per.connection=-1", "--queued.max.request.bytes.per.ip=-1"}, false},
		{"under 1 KiB", []string{"--queued.max.request.bytes.per.ip=100"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Default()
			fs := flag.NewFlagSet("broker", flag.ContinueOnError)
			cfg.RegisterFlags(fs)
			require.NoError(t, fs.Parse(tt.args))
			if tt.wantErr {
				assert.ErrorContains(t, cfg.validate(), "queued.max.request.bytes.per")
			} else {
				assert.NoError(t, cfg.validate())
			}
		})
	}
}
