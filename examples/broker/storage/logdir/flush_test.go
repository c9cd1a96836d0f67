package logdir

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// syncs counts fsyncs by file name (a directory by its own name), and can
// be told to fail them.
type syncs struct {
	mu    sync.Mutex
	n     map[string]int
	fail  error
	calls int
}

func newSyncs() *syncs { return &syncs{n: make(map[string]int)} }

func (s *syncs) sync(f *os.File) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.fail != nil {
		return s.fail
	}
	s.n[filepath.Base(f.Name())]++
	return nil
}

func (s *syncs) count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[name]
}

func (s *syncs) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.n)
}

func (s *syncs) failWith(err error) {
	s.mu.Lock()
	s.fail = err
	s.mu.Unlock()
}

const (
	firstLog   = "00000000000000000000.log"
	firstIndex = "00000000000000000000.index"
)

func TestFlushEveryNMessages(t *testing.T) {
	fs := newSyncs()
	d := openTestDir(t, t.TempDir(), withSync(fs.sync), WithFlush(3, 0))
	l := openTestLog(t, d)
	assert.Equal(t, 1, fs.count(firstLog), "opening fsyncs the active segment: nothing starts unflushed")
	fs.reset()

	tests := []struct {
		records, wantSyncs int
	}{
		{1, 0}, {1, 0}, {1, 1}, // three records: the third append fsyncs
		{1, 1}, {1, 1}, {1, 2},
		{5, 3}, // a batch of more than the interval fsyncs at once
		{1, 3},
	}
	for i, tt := range tests {
		fill(t, 1000, []int{tt.records}, l)
		assert.Equal(t, tt.wantSyncs, fs.count(firstLog), "after append %d", i)
		assert.Equal(t, tt.wantSyncs, fs.count(firstIndex), "the index with it, after append %d", i)
	}
	require.NoError(t, l.Close())
	assert.Equal(t, 4, fs.count(firstLog), "Close fsyncs what is unflushed")
	require.NoError(t, l.Close())
	assert.Equal(t, 4, fs.count(firstLog), "once")
}

func TestNoFlushByDefault(t *testing.T) {
	fs := newSyncs()
	d := openTestDir(t, t.TempDir(), withSync(fs.sync))
	l := openTestLog(t, d)
	fs.reset()
	fill(t, 1000, counts(100), l)
	assert.Zero(t, fs.count(firstLog), "log.flush.interval.messages is effectively infinite: the OS writes back")
	require.NoError(t, l.Close())
	assert.Equal(t, 1, fs.count(firstLog))
}

func TestRollFsyncsTheSealedSegment(t *testing.T) {
	fs := newSyncs()
	d := openTestDir(t, t.TempDir(), withSync(fs.sync), WithSegmentBytes(100))
	l := openTestLog(t, d)
	fs.reset()
	fill(t, 1000, []int{1, 1}, l) // each batch over half a segment: the second rolls
	require.Len(t, l.segs, 2)
	assert.Equal(t, 1, fs.count(firstLog), "the sealed segment is on disk before the next exists")
	assert.Equal(t, 1, fs.count(firstIndex))
	assert.Equal(t, 1, fs.count("t-0"), "and the new file's name too")
	assert.Zero(t, fs.count("00000000000000000001.log"), "the new active one is not fsynced")
}

// TestFlushInterval runs the flusher in a synctest bubble: an append is
// fsynced when the interval next ticks, and an idle log is not fsynced
// again.
func TestFlushInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newSyncs()
		d, err := Open(t.TempDir(), withSync(fs.sync), WithFlush(1<<62, time.Second))
		require.NoError(t, err)
		l := openTestLog(t, d)
		fs.reset()

		fill(t, 1000, []int{2}, l)
		time.Sleep(999 * time.Millisecond)
		synctest.Wait()
		assert.Zero(t, fs.count(firstLog), "not yet")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 1, fs.count(firstLog), "the flusher's tick fsyncs it")
		assert.Equal(t, 1, fs.count(firstIndex))

		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Equal(t, 1, fs.count(firstLog), "nothing new, nothing fsynced")

		fill(t, 1000, []int{1}, l)
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, 2, fs.count(firstLog))
		require.NoError(t, d.Close())
		assert.Equal(t, 2, fs.count(firstLog), "Close has nothing left to flush")
	})
}

// TestFailedFsyncIsSticky: after an fsync fails, the state of the disk is
// unknown, and the log takes no more appends; reads go on.
func TestFailedFsyncIsSticky(t *testing.T) {
	fs := newSyncs()
	d := openTestDir(t, t.TempDir(), withSync(fs.sync), WithFlush(2, 0))
	l := openTestLog(t, d)
	fill(t, 1000, []int{1}, l)
	broken := errors.New("EIO")
	fs.failWith(broken)
	err := l.Append(stored(t, 1, 1, 1000))
	assert.ErrorIs(t, err, broken)
	fs.failWith(nil)
	assert.ErrorIs(t, l.Append(stored(t, 2, 1, 1000)), broken, "still refused once the disk answers again")
	assert.Equal(t, seq(0, 2), offsets(t, readAll(t, l)), "the written batch is readable: it may be on disk")
	assert.Error(t, l.DropBefore(2), "a drop that would roll is refused too")
}

// TestFlusherRacesAppendsAndReads runs the flusher every millisecond
// against appends and reads, as a partition makes them (appends under its
// write lock, reads under its read lock), for the race detector.
func TestFlusherRacesAppendsAndReads(t *testing.T) {
	fs := newSyncs()
	d := openTestDir(t, t.TempDir(), withSync(fs.sync), WithFlush(1<<62, time.Millisecond), WithSegmentBytes(1000))
	l := openTestLog(t, d)
	var partition sync.RWMutex
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				partition.RLock()
				b := l.Bounds()
				raw, err := l.Read(nil, b.Start, b.End, 1<<20, true)
				partition.RUnlock()
				if !assert.NoError(t, err) {
					return
				}
				assert.Equal(t, seq(b.Start, b.End), offsets(t, raw))
			}
		}()
	}
	for i := range 300 {
		partition.Lock()
		require.NoError(t, l.Append(stored(t, l.Bounds().End, 1+i%3, 1000)))
		if i%50 == 49 {
			require.NoError(t, l.DropBefore(l.Bounds().End-20))
		}
		partition.Unlock()
	}
	close(done)
	wg.Wait()
	require.NoError(t, l.Close())
	assert.Positive(t, fs.count("t-0"), "segments rolled")
	var _ storage.Log = l
}
