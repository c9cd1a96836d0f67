package logdir

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// noSync skips fsyncs: most tests are about what is written, not about
// power losses, and run faster without them.
var noSync = withSync(func(*os.File) error { return nil })

// openTestDir opens a log dir at path, closed at the end of the test.
func openTestDir(t *testing.T, path string, opts ...Option) *Dir {
	t.Helper()
	d, err := Open(path, append([]Option{noSync}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return d
}

var testID = storage.TopicID{1, 2, 3}

// openTestLog opens partition 0 of topic "t" in d.
func openTestLog(t *testing.T, d *Dir) *Log {
	t.Helper()
	l, err := d.OpenLog("t", testID, 0)
	require.NoError(t, err)
	return l.(*Log)
}

// stored returns a batch of n records at base, as a log holds it: values
// "v<offset>", timestamped ts.
func stored(t *testing.T, base int64, n int, ts int64) *storage.Batch {
	t.Helper()
	vals := make([]string, n)
	for i := range vals {
		vals[i] = fmt.Sprintf("v%d", base+int64(i))
	}
	b, err := storage.ParseStoredBatch(batchtest.At(base, batchtest.Values(ts, vals...)))
	require.NoError(t, err)
	return b
}

// fill appends batches of the given record counts to every log given, at
// their end, timestamped ts, and returns the batches.
func fill(t *testing.T, ts int64, counts []int, logs ...storage.Log) []*storage.Batch {
	t.Helper()
	var out []*storage.Batch
	for _, n := range counts {
		b := stored(t, logs[0].Bounds().End, n, ts)
		for _, l := range logs {
			require.NoError(t, l.Append(b))
		}
		out = append(out, b)
	}
	return out
}

// offsets returns the offsets of the records in raw, whole batches.
func offsets(t *testing.T, raw []byte) []int64 {
	t.Helper()
	recs, err := batchtest.Decode(raw)
	require.NoError(t, err)
	var out []int64
	for _, r := range recs {
		require.Equal(t, fmt.Sprintf("v%d", r.Offset), string(r.Value), "record %d holds its own value", r.Offset)
		out = append(out, r.Offset)
	}
	return out
}

// readAll reads every batch of l.
func readAll(t *testing.T, l storage.Log) []byte {
	t.Helper()
	b := l.Bounds()
	raw, err := l.Read(nil, b.Start, b.End, 1<<30, true)
	require.NoError(t, err)
	return raw
}

// files lists the names of the files in dir, sorted.
func files(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// segmentFiles lists the .log files of a partition directory.
func segmentFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, f := range files(t, dir) {
		if filepath.Ext(f) == logSuffix {
			out = append(out, f)
		}
	}
	return out
}
