package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlanFiles(t *testing.T) {
	mem := Default()
	disk := Default()
	disk.LogDirs = "/somewhere"
	explicit := disk
	explicit.MaxConnections, explicit.MaxBrokerPartitions = 100, 50
	tests := []struct {
		name     string
		cfg      Config
		limit    int
		peers    int
		existing int
		want     fdPlan
	}{
		{"in memory: every descriptor left for connections", mem, 20000, 0, 0,
			fdPlan{limit: 20000, reserve: 64, maxConnections: 19936, maxPartitions: defaultMaxBrokerPartitions}},
		{"a cluster reserves for its peers", mem, 20000, 2, 0,
			fdPlan{limit: 20000, reserve: 72, maxConnections: 19928, maxPartitions: defaultMaxBrokerPartitions}},
		{"log.dirs: half for connections, a quarter of the rest for sealed segments", disk, 20000, 0, 0,
			fdPlan{limit: 20000, reserve: 64, maxConnections: 9968, openSealed: 1024, maxPartitions: (9968 - 1024) / 2}},
		{"a small limit", disk, 1024, 0, 0,
			fdPlan{limit: 1024, reserve: 64, maxConnections: 480, openSealed: 120, maxPartitions: 180}},
		{"explicit settings within the limit", explicit, 1024, 0, 0,
			fdPlan{limit: 1024, reserve: 64, maxConnections: 100, openSealed: 215, maxPartitions: 50}},
		{"a limit lowered below what the log dir holds: fewer connections", disk, 1024, 0, 300,
			fdPlan{limit: 1024, reserve: 64, maxConnections: 960 - 600 - 120, openSealed: 120, maxPartitions: 300}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := planFiles(tt.cfg, tt.limit, tt.peers, tt.existing)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			if tt.cfg.LogDirs != "" {
				used := got.reserve + got.maxConnections + got.openSealed + fdPerPartition*int(got.maxPartitions)
				assert.LessOrEqual(t, used, tt.limit, "everything fits under the limit")
			}
		})
	}
}

// TestPlanFilesRefusesALogDirTooLarge: a log dir whose partitions alone
// need more descriptors than the limit leaves is refused at start, with
// what to do.
func TestPlanFilesRefusesALogDirTooLarge(t *testing.T) {
	cfg := Default()
	cfg.LogDirs = "/somewhere"
	_, err := planFiles(cfg, 1024, 0, 1000)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ulimit -n")
	_, err = planFiles(cfg, 32, 0, 0)
	assert.Error(t, err, "not even the reserve")
}
