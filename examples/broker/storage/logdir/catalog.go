package logdir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/internal/atomicfile"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// catalogName is the topic catalog: the topics' names, ids, partition
// counts, replication factors and configs, as JSON, replaced whole and
// atomically on each change (atomicfile.Write). Its format:
//
//	{"version": 1, "topics": [
//	  {"name": "orders", "id": "<22-character id>", "partitions": 3, "replication_factor": 3,
//	   "configs": {"max.message.bytes": "1048588", "min.insync.replicas": "2",
//	               "retention.bytes": "-1", "retention.ms": "604800000"}}]}
//
// The configs are all the topic's, under Kafka's names, defaults
// included: a topic keeps the configs it was created with, whatever the
// broker's defaults are at the next start. A catalog written before
// replication has neither replication_factor nor min.insync.replicas, and
// reads as 1 for both: the version stays 1, since the one change is fields
// that a reader takes as their default when absent.
const catalogName = "topics.json"

type catalogFile struct {
	Version int            `json:"version"`
	Topics  []catalogTopic `json:"topics"`
}

type catalogTopic struct {
	Name              string            `json:"name"`
	ID                string            `json:"id"`
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int16             `json:"replication_factor,omitempty"` // absent (0): 1
	Configs           map[string]string `json:"configs"`
}

// optionalConfigs are configs added since the catalog's first version, and
// the value a topic written before them has.
// The compaction configs came with the log cleaner: a topic written
// before them had Kafka's defaults, as a topic that did not compact.
var optionalConfigs = map[string]string{
	storage.ConfigMinInsyncReplicas:     "1",
	storage.ConfigUncleanLeaderElection: "false",
	storage.ConfigCleanupPolicy:         "delete",
	storage.ConfigDirtyRatio:            "0.5",
	storage.ConfigMinCompactionLag:      "0",
	storage.ConfigMaxCompactionLag:      "9223372036854775807",
	storage.ConfigDeleteRetentionMs:     "86400000",
	storage.ConfigSegmentBytes:          "1073741824",
	storage.ConfigSegmentMs:             "604800000",
	// The replication throttles' lists came later: none, Kafka's default.
	storage.ConfigLeaderThrottledReplicas:   "",
	storage.ConfigFollowerThrottledReplicas: "",
}

// partitionDirName matches a partition's directory: the topic, a dash,
// the partition number. A topic's name may hold dashes; the last one
// separates.
var partitionDirName = regexp.MustCompile(`^(.+)-([0-9]+)$`)

var _ storage.Catalog = (*Dir)(nil)

// Topics implements storage.Catalog: it reads the catalog, and deletes
// the partition directories it does not account for (a topic deleted, or
// its creation undone, before a crash let its directories go), with a
// warning each. Partition directories without a catalog at all are
// ErrInconsistent: the catalog is never deleted, so it was lost, and the
// directories are kept for the operator.
func (d *Dir) Topics() ([]storage.TopicSpec, error) {
	d.catalogMu.Lock()
	defer d.catalogMu.Unlock()
	specs, found, err := d.readCatalog()
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(d.path)
	if err != nil {
		return nil, fmt.Errorf("logdir: %w", err)
	}
	for _, e := range entries {
		m := partitionDirName.FindStringSubmatch(e.Name())
		if !e.IsDir() || m == nil {
			continue
		}
		partition, err := strconv.ParseInt(m[2], 10, 32)
		if spec, ok := specs[m[1]]; ok && err == nil && int32(partition) < spec.Partitions {
			continue
		}
		if !found {
			return nil, fmt.Errorf("%w: %s holds partition directories (%s) but no %s", ErrInconsistent, d.path, e.Name(), catalogName)
		}
		d.cfg.log.Warn("deleting a partition directory that no topic owns", zap.String("dir", e.Name()))
		if err := d.removeDir(filepath.Join(d.path, e.Name())); err != nil {
			return nil, err
		}
	}
	d.specs = specs
	out := make([]storage.TopicSpec, 0, len(specs))
	for _, s := range specs {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// AddTopic implements storage.Catalog.
func (d *Dir) AddTopic(spec storage.TopicSpec) error {
	d.catalogMu.Lock()
	defer d.catalogMu.Unlock()
	if err := d.loadCatalogLocked(); err != nil {
		return err
	}
	old, had := d.specs[spec.Name]
	d.specs[spec.Name] = spec
	if err := d.writeCatalogLocked(); err != nil {
		if had {
			d.specs[spec.Name] = old
		} else {
			delete(d.specs, spec.Name)
		}
		return err
	}
	return nil
}

// RemoveTopic implements storage.Catalog.
func (d *Dir) RemoveTopic(name string, id storage.TopicID) error {
	d.catalogMu.Lock()
	defer d.catalogMu.Unlock()
	if err := d.loadCatalogLocked(); err != nil {
		return err
	}
	old, had := d.specs[name]
	if !had || old.ID != id {
		return nil
	}
	delete(d.specs, name)
	if err := d.writeCatalogLocked(); err != nil {
		d.specs[name] = old
		return err
	}
	return nil
}

// loadCatalogLocked reads the catalog if Topics has not.
//
// REQUIRES: d.catalogMu held.
func (d *Dir) loadCatalogLocked() error {
	if d.specs != nil {
		return nil
	}
	specs, _, err := d.readCatalog()
	d.specs = specs
	return err
}

// readCatalog reads the catalog file; found is false when there is none.
func (d *Dir) readCatalog() (specs map[string]storage.TopicSpec, found bool, err error) {
	path := filepath.Join(d.path, catalogName)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return make(map[string]storage.TopicSpec), false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("logdir: %w", err)
	}
	var f catalogFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, true, fmt.Errorf("%w: %s: %v", ErrInconsistent, path, err)
	}
	if f.Version != 1 {
		return nil, true, fmt.Errorf("%w: %s: version %d, this broker reads 1", ErrInconsistent, path, f.Version)
	}
	specs = make(map[string]storage.TopicSpec, len(f.Topics))
	for _, t := range f.Topics {
		spec, err := t.spec()
		if err == nil {
			if _, dup := specs[t.Name]; dup {
				err = errors.New("listed twice")
			}
		}
		if err != nil {
			return nil, true, fmt.Errorf("%w: %s: topic %q: %v", ErrInconsistent, path, t.Name, err)
		}
		specs[t.Name] = spec
	}
	return specs, true, nil
}

// spec checks t and returns it as a TopicSpec.
func (t catalogTopic) spec() (storage.TopicSpec, error) {
	if err := storage.ValidateTopicName(t.Name); err != nil {
		return storage.TopicSpec{}, err
	}
	id, err := storage.ParseTopicID(t.ID)
	if err != nil {
		return storage.TopicSpec{}, err
	}
	if t.Partitions < 1 || t.Partitions > storage.MaxPartitions {
		return storage.TopicSpec{}, fmt.Errorf("%d partitions", t.Partitions)
	}
	rf := t.ReplicationFactor
	switch {
	case rf == 0:
		rf = 1
	case rf < 0:
		return storage.TopicSpec{}, fmt.Errorf("replication factor %d", rf)
	}
	var cfg storage.TopicConfig
	for _, c := range cfg.Values() { // every config the storage knows, by name
		v, ok := t.Configs[c.Name]
		if !ok {
			if v, ok = optionalConfigs[c.Name]; !ok {
				return storage.TopicSpec{}, fmt.Errorf("no %s", c.Name)
			}
		}
		if cfg, err = cfg.With(c.Name, &v); err != nil {
			return storage.TopicSpec{}, err
		}
	}
	return storage.TopicSpec{Name: t.Name, ID: id, Partitions: t.Partitions, Config: cfg, ReplicationFactor: rf}, nil
}

// writeCatalogLocked replaces the catalog file with d.specs.
//
// REQUIRES: d.catalogMu held.
func (d *Dir) writeCatalogLocked() error {
	f := catalogFile{Version: 1, Topics: make([]catalogTopic, 0, len(d.specs))}
	for _, s := range d.specs {
		configs := make(map[string]string)
		for _, v := range s.Config.Values() {
			configs[v.Name] = v.Value
		}
		f.Topics = append(f.Topics, catalogTopic{Name: s.Name, ID: s.ID.String(), Partitions: s.Partitions,
			ReplicationFactor: max(s.ReplicationFactor, 1), Configs: configs})
	}
	sort.Slice(f.Topics, func(i, j int) bool { return f.Topics[i].Name < f.Topics[j].Name })
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("logdir: %w", err)
	}
	return atomicfile.Write(d.cfg.sync, filepath.Join(d.path, catalogName), append(data, '\n'))
}
