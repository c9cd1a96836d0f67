package server

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/internal/atomicfile"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/storage/logdir"
)

// durable is what the broker keeps in log.dirs: the log dir (partitions in
// segment files, the topic catalog, producer ids, the cluster id), and a
// broker alone's ACL bindings. The
// groups' commits are records of __consumer_offsets, whose partitions are
// logs like any other's there. Opened first (the log dir's lock keeps a
// second broker out), closed last, once the coordinator and the logs are.
type durable struct {
	dir *logdir.Dir
}

// openDurable opens cfg.LogDirs: the log dir, with its recovery done
// partition by partition later by the store; openSealed bounds the sealed
// segment files its logs keep open (see limits.go). It returns nil without
// log.dirs.
func openDurable(cfg Config, log *zap.Logger, openSealed int) (*durable, error) {
	if cfg.LogDirs == "" {
		return nil, nil
	}
	dir, err := logdir.Open(cfg.LogDirs,
		logdir.WithNodeID(cfg.NodeID),
		logdir.WithSegmentBytes(cfg.LogSegmentBytes),
		logdir.WithTopicSegmentBytes(offsetsTopic, cfg.OffsetsTopicSegmentBytes),
		logdir.WithIndexIntervalBytes(cfg.LogIndexIntervalBytes),
		logdir.WithRollAfter(cfg.LogRoll),
		logdir.WithFlush(cfg.LogFlushIntervalMessages, cfg.LogFlushInterval),
		logdir.WithOpenSegments(openSealed),
		logdir.WithCheckpointInterval(cfg.LogFlushOffsetCheckpoint),
		logdir.WithLogger(log.Named("logdir")))
	if err != nil {
		return nil, fmt.Errorf("log.dirs: %w", err)
	}
	log.Info("opened log dir", zap.String("log_dirs", cfg.LogDirs), zap.String("cluster_id", dir.ClusterID()),
		zap.Bool("clean_shutdown", dir.CleanShutdown()))
	return &durable{dir: dir}, nil
}

// partitions returns how many partitions the log dir's topics have, all
// together: the logs the store will open.
func (d *durable) partitions() (int, error) {
	specs, err := d.dir.Topics()
	if err != nil {
		return 0, fmt.Errorf("log.dirs: %w", err)
	}
	n := 0
	for _, spec := range specs {
		n += int(spec.Partitions)
	}
	return n, nil
}

// close closes the log dir, which records a clean shutdown. Nil-safe.
func (d *durable) close() error {
	if d == nil {
		return nil
	}
	return d.dir.Close()
}

// securityName is the file in log.dirs that keeps a broker alone's ACL
// bindings, SCRAM credentials, client quotas and broker and group configs
// (the records of its metadata log that are not topics): a metadata record adding each
// (metadata.Record's encoding), replaced atomically at each change. A
// broker of a cluster keeps them in its quorum's log instead
// (__cluster_metadata), as every record.
const securityName = "security.json"

// saveSecurity replaces the kept bindings, credentials and quotas with
// im's: one atomic file write, fsynced, so that a change a client was told
// of survives a power loss. O(bindings + credentials + quotas) per change,
// which administration can afford.
func (d *durable) saveSecurity(im *metadata.Image) error {
	bindings := im.ACLs()
	rec := metadata.Record{ACLs: make([]metadata.ACLChange, len(bindings))}
	for i, b := range bindings {
		rec.ACLs[i].Binding = b
	}
	for _, u := range im.ScramUsers() {
		for _, c := range u.Credentials {
			rec.Scram = append(rec.Scram, metadata.ScramChange{User: u.User, Mechanism: c.Mechanism, Credential: &c})
		}
	}
	rec.Quotas = im.QuotaChanges()
	rec.Configs = im.ConfigEntries()
	return atomicfile.Write((*os.File).Sync, filepath.Join(d.dir.Path(), securityName), rec.Encode())
}

// loadSecurity returns the kept bindings, credentials and quotas, as the record
// to seed a broker alone's metadata log with; an empty one before the
// first was kept.
func (d *durable) loadSecurity() (metadata.Record, error) {
	data, err := os.ReadFile(filepath.Join(d.dir.Path(), securityName))
	if errors.Is(err, fs.ErrNotExist) {
		return metadata.Record{}, nil
	}
	if err != nil {
		return metadata.Record{}, fmt.Errorf("log.dirs: %w", err)
	}
	rec, err := metadata.DecodeRecord(data)
	if err != nil {
		return metadata.Record{}, fmt.Errorf("log.dirs: %s: %w", securityName, err)
	}
	return metadata.Record{ACLs: rec.ACLs, Scram: rec.Scram, Quotas: rec.Quotas, Configs: rec.Configs}, nil
}

// producerIDBlock is how many producer ids the broker reserves on disk at
// a time, as Kafka's ProducerIdManager takes blocks of 1000.
const producerIDBlock = 1000

// producerIDs hands out producer ids, unique for the life of the broker's
// data: in memory without log.dirs (ids restart at 0 with the logs, which
// restart empty), from blocks reserved in the log dir with it, so that a
// restarted broker never gives a new producer the id of one whose
// sequences its partitions still hold.
//
// In a cluster every broker hands out ids, and a producer's id must be its
// own on every partition it writes to, whichever broker gave it: each
// broker's ids are offset by its node id shifted left by
// cluster.ProducerIDShift, a range of its own (Kafka has its controller hand
// out blocks instead).
type producerIDs struct {
	reserve func(n int64) (first int64, err error) // nil: in memory
	base    int64                                  // added to every id; immutable

	mu   sync.Mutex // guards the following
	next int64      // the id handed out next
	end  int64      // the end of the block reserved; next == end: reserve another
}

// nextID returns a new producer id, reserving a block first if the last
// one is used up (one atomic file write per 1000 ids).
func (p *producerIDs) nextID() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reserve != nil && p.next == p.end {
		first, err := p.reserve(producerIDBlock)
		if err != nil {
			return 0, err
		}
		p.next, p.end = first, first+producerIDBlock
	}
	id := p.next
	p.next++
	return p.base + id, nil
}
