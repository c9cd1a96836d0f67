package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	var synced []string
	sync := func(f *os.File) error { synced = append(synced, filepath.Base(f.Name())); return f.Sync() }
	require.NoError(t, Write(sync, path, []byte("one")))
	require.NoError(t, Write(sync, path, []byte("two")))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "two", string(got))
	assert.NoFileExists(t, path+TmpSuffix)
	assert.Equal(t, []string{"f.tmp", filepath.Base(dir), "f.tmp", filepath.Base(dir)}, synced,
		"the data, then the rename")
}

func TestWriteFailureKeepsTheOldFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
	err := Write(func(*os.File) error { return errors.New("EIO") }, path, []byte("new"))
	assert.ErrorContains(t, err, "EIO")
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "old", string(got))
	assert.NoFileExists(t, path+TmpSuffix)
}
