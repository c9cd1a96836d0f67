package server

import (
	"encoding/binary"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The broker hands every request body to kmsg, which must bound its own
// work by the bytes it is given. kmsg v1.15.0 did not: these are the
// reproducers, kept as regression tests of the version in go.mod.

// TestKmsgTagCountBomb: a tag section claiming 2^32-1 tags in a 7-byte
// ApiVersions v3 body. kmsg v1.15.0 loops through the whole count after
// the bytes run out (47.6 s of CPU, measured); v1.15.1 stops at the end of
// the input. It measures the decoding thread's CPU, not wall time.
func TestKmsgTagCountBomb(t *testing.T) {
	body := []byte{0x01, 0x01, 0xff, 0xff, 0xff, 0xff, 0x0f}
	cpu := decodeCPU(t, func() { _ = versioned(kmsg.NewPtrApiVersionsRequest(), 3).ReadFrom(body) })
	assert.Less(t, cpu, 50*time.Millisecond, "kmsg stops at the end of the input")
}

// TestKmsgArrayCountBomb: a CreateTopics v4 body whose topic array claims
// as many topics as it has bytes. kbin checks one byte per element, so
// kmsg v1.15.0 allocates the whole array of 80-byte structs before reading
// the first (80 bytes per byte of the body: a 100 MiB frame asks for 8 GB);
// v1.15.1 checks the count against the smallest encoding of a topic.
func TestKmsgArrayCountBomb(t *testing.T) {
	count := uint32(1 << 18)
	body := append(binary.BigEndian.AppendUint32(nil, count), make([]byte, count)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := versioned(kmsg.NewPtrCreateTopicsRequest(), 4).ReadFrom(body)
	runtime.ReadMemStats(&after)
	assert.Error(t, err)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(count), "refused before allocating the array")
}

func versioned(req kmsg.Request, v int16) kmsg.Request {
	req.SetVersion(v)
	return req
}

// decodeCPU runs decode on a thread of its own and returns the CPU time
// that thread spent; it fails the test if decode has not returned after
// 10 seconds (and leaves it spinning: the test binary exits soon after).
func decodeCPU(t *testing.T, decode func()) time.Duration {
	t.Helper()
	done := make(chan time.Duration, 1)
	go func() {
		runtime.LockOSThread() // the thread's CPU clock is the decode's
		defer runtime.UnlockOSThread()
		start := threadCPU()
		decode()
		done <- threadCPU() - start
	}()
	select {
	case cpu := <-done:
		return cpu
	case <-time.After(10 * time.Second):
		t.Fatal("still decoding after 10s")
		return 0
	}
}

// threadCPU returns the CPU time of the calling thread (RUSAGE_THREAD).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(1, &ru) // RUSAGE_THREAD
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
