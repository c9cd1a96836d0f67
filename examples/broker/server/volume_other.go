//go:build !unix

package server

// volumeBytes returns -1 and -1, Kafka's unknown: this platform's file
// system sizes are not read.
func volumeBytes(string) (total, usable int64) { return -1, -1 }
