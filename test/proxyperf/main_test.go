package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr bool
	}{
		{name: "defaults", args: nil},
		{name: "a smoke run", args: []string{"--consumers", "5", "--partitions", "2", "--rate", "100", "--warmup", "1s", "--duration", "2s"}},
		{name: "no consumers", args: []string{"--consumers", "0"}, wantErr: true},
		{name: "records too small for the time", args: []string{"--size", "4"}, wantErr: true},
		{name: "a stray argument", args: []string{"x"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseFlags(tt.args, &bytes.Buffer{})
			assert.Equal(t, tt.wantErr, err != nil, "error: %v", err)
		})
	}
}

func TestParseStat(t *testing.T) {
	// A command name with spaces and parentheses; utime 250, stime 50 ticks.
	line := "4242 (broker (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 100 1000 200 18446744073709551615"
	d, err := parseStat(line)
	require.NoError(t, err)
	assert.Equal(t, 3*time.Second, d)
	_, err = parseStat("garbage")
	assert.Error(t, err)
}

func TestParseStatus(t *testing.T) {
	rss, peak, err := parseStatus("Name:\tproxy\nVmHWM:\t   2048 kB\nVmRSS:\t   1024 kB\nThreads:\t9\n")
	require.NoError(t, err)
	assert.Equal(t, int64(1<<20), rss)
	assert.Equal(t, int64(2<<20), peak)
	_, _, err = parseStatus("Name:\tproxy\n")
	assert.Error(t, err)
}

func TestCounter(t *testing.T) {
	text := strings.Join([]string{
		`# HELP broker_requests_total Requests answered, by API.`,
		`broker_requests_total{api="Fetch"} 120`,
		`broker_requests_total{api="Produce"} 7`,
		`broker_requests_total_other{api="Fetch"} 1000`,
		`proxy_fetch_partitions_total{source="cache"} 3e+06`,
	}, "\n")
	assert.Equal(t, 120.0, counter(text, "broker_requests_total", `api="Fetch"`))
	assert.Equal(t, 127.0, counter(text, "broker_requests_total"), "every label")
	assert.Equal(t, 3e6, counter(text, "proxy_fetch_partitions_total", `source="cache"`))
	assert.Zero(t, counter(text, "missing"))
}

func TestPercentiles(t *testing.T) {
	var xs []float64
	for i := 100; i >= 1; i-- {
		xs = append(xs, float64(i))
	}
	p := percentilesOf(xs)
	assert.Equal(t, percentiles{P50: 50, P90: 90, P99: 99, P999: 100, Max: 100, Count: 100}, p)
	assert.Equal(t, percentiles{}, percentilesOf(nil))
}

func TestReportAndPlot(t *testing.T) {
	r := result{Config: defaultConfig().fields(),
		Direct: phase{Name: "direct", BrokerCPUCores: 1.2, UpstreamFetchesPerSec: 2400, ClientFetchesPerSec: 2400,
			Produced: 1000, Delivered: 1, Latency: percentiles{P50: 0.5, P99: 2}},
		Proxy: phase{Name: "proxy", BrokerCPUCores: 0.1, UpstreamFetchesPerSec: 24, ClientFetchesPerSec: 2390,
			Produced: 1000, Delivered: 1, Latency: percentiles{P50: 0.7, P99: 2.5}, ProxyCPUCores: 0.4, ProxyRSSMiB: 40, ProxyPeakRSSMiB: 50}}
	r.compare()
	assert.InDelta(t, 100, r.FetchReduction, 1e-9)
	assert.InDelta(t, 12, r.BrokerCPUReduction, 1e-9)
	assert.InDelta(t, 0.5, r.AddedP99MS, 1e-9)
	var out bytes.Buffer
	r.print(&out)
	assert.Contains(t, out.String(), "100.0x fewer")
	for _, name := range []string{"plot.svg", "plot.png"} {
		path := filepath.Join(t.TempDir(), name)
		require.NoError(t, writePlot(path, r))
		st, err := os.Stat(path)
		require.NoError(t, err)
		assert.Positive(t, st.Size(), name)
	}
}

func TestCPULists(t *testing.T) {
	cpus, err := parseCPUList("2,0-1,1")
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1, 2}, cpus)
	assert.Equal(t, "0,1,2", cpuList(cpus))
	for _, bad := range []string{"", "a", "-1", "3-1", "1,"} {
		_, err := parseCPUList(bad)
		assert.ErrorIs(t, err, errUsage, "%q", bad)
	}

	rest, err := otherCPUs([]int{0}, 4)
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 3}, rest)
	_, err = otherCPUs([]int{0, 1}, 2)
	assert.ErrorIs(t, err, errUsage, "no CPU left for the clients")
	_, err = otherCPUs([]int{4}, 4)
	assert.ErrorIs(t, err, errUsage, "a CPU the machine lacks")

	cfg, err := parseFlags([]string{"--server-cpus", "0"}, &bytes.Buffer{})
	if runtime.NumCPU() < 2 {
		assert.ErrorIs(t, err, errUsage, "one CPU cannot be split")
		return
	}
	require.NoError(t, err)
	assert.Equal(t, []int{0}, cfg.serverCPUs)
	assert.Equal(t, "0", cfg.fields().ServerCPUs)
}
