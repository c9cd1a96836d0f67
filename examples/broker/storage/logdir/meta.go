package logdir

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gopurgatory/purgatory/examples/broker/internal/atomicfile"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// metaName is the log dir's identity file, Kafka's meta.properties:
// version=1, cluster.id and node.id, as name=value lines.
const metaName = "meta.properties"

// loadMeta reads meta.properties, or writes it for a new directory with a
// new cluster id, and returns the cluster id. A node id other than this
// broker's is ErrInconsistent: the directory is another broker's.
func (d *Dir) loadMeta() (string, error) {
	path := filepath.Join(d.path, metaName)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		var id [16]byte
		_, _ = rand.Read(id[:]) // crypto/rand.Read never fails
		cluster := base64.RawURLEncoding.EncodeToString(id[:])
		meta := fmt.Sprintf("version=1\ncluster.id=%s\nnode.id=%d\n", cluster, d.cfg.nodeID)
		return cluster, atomicfile.Write(d.cfg.sync, path, []byte(meta))
	}
	if err != nil {
		return "", fmt.Errorf("logdir: %w", err)
	}
	props := parseProperties(data, "=")
	cluster, node := props["cluster.id"], props["node.id"]
	if cluster == "" || node == "" {
		return "", fmt.Errorf("%w: %s has no cluster.id or node.id", ErrInconsistent, path)
	}
	if node != strconv.Itoa(int(d.cfg.nodeID)) {
		return "", fmt.Errorf("%w: %s belongs to node.id %s, this broker is %d", ErrInconsistent, path, node, d.cfg.nodeID)
	}
	return cluster, nil
}

// parseProperties reads name<sep>value lines, skipping blanks and '#'
// comments.
func parseProperties(data []byte, sep string) map[string]string {
	props := make(map[string]string)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		if name, value, ok := strings.Cut(line, sep); ok {
			props[strings.TrimSpace(name)] = strings.TrimSpace(value)
		}
	}
	return props
}

// readPartitionMeta returns the topic id a partition's directory was made
// for, from its partition.metadata (Kafka's: "version: 0" and
// "topic_id: <id>" lines). An error wrapping fs.ErrNotExist means there is
// none.
func readPartitionMeta(dir string) (storage.TopicID, error) {
	path := filepath.Join(dir, partitionMeta)
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return storage.TopicID{}, err
		}
		return storage.TopicID{}, fmt.Errorf("logdir: %w", err)
	}
	id, err := storage.ParseTopicID(parseProperties(data, ":")["topic_id"])
	if err != nil {
		return storage.TopicID{}, fmt.Errorf("%w: %s: %v", ErrInconsistent, path, err)
	}
	return id, nil
}

// writePartitionMeta records which topic a partition's directory is for.
func writePartitionMeta(sync func(*os.File) error, dir string, id storage.TopicID) error {
	return atomicfile.Write(sync, filepath.Join(dir, partitionMeta), fmt.Appendf(nil, "version: 0\ntopic_id: %s\n", id))
}
