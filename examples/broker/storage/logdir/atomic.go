package logdir

import (
	"fmt"
	"os"
	"path/filepath"
)

// tmpSuffix marks a file being written by writeFileAtomic; one left by a
// crash is deleted when its directory is opened.
const tmpSuffix = ".tmp"

// writeFileAtomic replaces the file at path with data, durably: it writes
// a temporary file beside it, fsyncs it, renames it over path and fsyncs
// the directory. A crash leaves the old file or the new one, never a mix.
func writeFileAtomic(sync func(*os.File) error, path string, data []byte) error {
	tmp := path + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("logdir: %w", err)
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
		return fmt.Errorf("logdir: write %s: %w", path, err)
	}
	return syncDir(sync, filepath.Dir(path))
}
