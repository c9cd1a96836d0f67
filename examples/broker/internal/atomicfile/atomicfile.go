package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// TmpSuffix marks a file being written; one left by a crash is the
// caller's to delete when it next opens its directory.
const TmpSuffix = ".tmp"

// Write replaces the file at path with data: it writes path+TmpSuffix,
// fsyncs it, renames it over path and fsyncs the directory.
func Write(sync func(*os.File) error, path string, data []byte) error {
	tmp := path + TmpSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = sync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("atomicfile: write %s: %w", path, err)
	}
	return SyncDir(sync, filepath.Dir(path))
}

// SyncDir fsyncs a directory, so that the files created, renamed or
// removed in it stay so after a power loss.
func SyncDir(sync func(*os.File) error, dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	err = sync(d)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("atomicfile: fsync %s: %w", dir, err)
	}
	return nil
}
