package logdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gopurgatory/purgatory/examples/broker/internal/atomicfile"
)

// producerIDsName holds the first producer id never handed out, as
// decimal text, replaced atomically at each reservation.
const producerIDsName = "producer-ids"

// ReserveProducerIDs reserves n producer ids for good and returns the
// first: the ids first to first+n-1 are never returned again by this
// directory, across restarts too, since the reservation is on disk before
// it returns. A broker hands ids out of the block in memory and reserves
// the next block when it runs out, as Kafka's ProducerIdManager takes
// blocks of 1000 from its controller: an id handed out before a crash is
// never given to another producer after it, which would make the
// partitions' sequence checks refuse the newcomer or, worse, take it for
// the old one. One atomic file write per block.
func (d *Dir) ReserveProducerIDs(n int64) (int64, error) {
	if n < 1 {
		return 0, fmt.Errorf("%w: reserve %d producer ids", ErrInvalidOption, n)
	}
	d.idsMu.Lock()
	defer d.idsMu.Unlock()
	path := filepath.Join(d.path, producerIDsName)
	first := int64(0)
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return 0, fmt.Errorf("logdir: %w", err)
	default:
		first, err = strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if err != nil || first < 0 {
			return 0, fmt.Errorf("%w: %s holds %q", ErrInconsistent, path, data)
		}
	}
	if err := atomicfile.Write(d.cfg.sync, path, []byte(strconv.FormatInt(first+n, 10)+"\n")); err != nil {
		return 0, err
	}
	return first, nil
}
