package logdir

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDirIsLocked(t *testing.T) {
	path := t.TempDir()
	d := openTestDir(t, path)
	_, err := Open(path, noSync)
	assert.ErrorIs(t, err, ErrLocked, "a second broker on the directory is refused")
	require.NoError(t, d.Close())
	again, err := Open(path, noSync)
	require.NoError(t, err, "Close releases the lock")
	require.NoError(t, again.Close())
}

func TestDirMeta(t *testing.T) {
	path := t.TempDir()
	d, err := Open(path, noSync, WithNodeID(3))
	require.NoError(t, err)
	cluster := d.ClusterID()
	assert.Len(t, cluster, 22)
	require.NoError(t, d.Close())
	meta, err := os.ReadFile(filepath.Join(path, metaName))
	require.NoError(t, err)
	assert.Equal(t, "version=1\ncluster.id="+cluster+"\nnode.id=3\n", string(meta))

	d, err = Open(path, noSync, WithNodeID(3))
	require.NoError(t, err)
	assert.Equal(t, cluster, d.ClusterID(), "the cluster id outlives the process")
	require.NoError(t, d.Close())

	_, err = Open(path, noSync, WithNodeID(4))
	assert.ErrorIs(t, err, ErrInconsistent, "another broker's directory")
}

func TestOpenValidatesOptions(t *testing.T) {
	for name, opt := range map[string]Option{
		"tiny segments":     WithSegmentBytes(10),
		"huge segments":     WithSegmentBytes(1 << 31),
		"negative interval": WithIndexIntervalBytes(-1),
		"no flush messages": WithFlush(0, 0),
		"negative node":     WithNodeID(-1),
		"nil clock":         WithClock(nil),
		"nil logger":        WithLogger(nil),
	} {
		_, err := Open(t.TempDir(), opt)
		assert.ErrorIs(t, err, ErrInvalidOption, name)
	}
}

func TestOpenLogAfterClose(t *testing.T) {
	d := openTestDir(t, t.TempDir())
	l := openTestLog(t, d)
	require.NoError(t, d.Close())
	assert.ErrorIs(t, l.Append(stored(t, 0, 1, 0)), ErrClosed, "Close closed the logs left open")
	_, err := d.OpenLog("t", testID, 1)
	assert.ErrorIs(t, err, ErrClosed)
}
