//go:build unix

package server

import "golang.org/x/sys/unix"

// volumeBytes returns the total and the usable bytes of the file system
// dir is on, or -1 and -1 (Kafka's unknown) if it cannot say.
func volumeBytes(dir string) (total, usable int64) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return -1, -1
	}
	return int64(st.Blocks) * int64(st.Bsize), int64(st.Bavail) * int64(st.Bsize)
}
