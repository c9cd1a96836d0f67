package server

// DescribeLogDirs: v0-v5.
//
// The broker's log dir (--log.dirs, one directory) with the partitions it
// holds: each partition's size in bytes (its log's batches, as Kafka
// counts them), an offset lag of 0 and no future replica (there are no
// reassignments between log dirs), and from v4 the total and usable bytes
// of the file system the dir is on (-1 where the platform cannot say),
// from v5 not cordoned. Topics null asks for every partition; a topic or
// partition the broker does not hold is left out, as Kafka answers. A
// broker without --log.dirs keeps its logs in memory: it has no log dir,
// and answers none.
//
// Authorization (authz.go): DESCRIBE on the cluster; else no log dir, and
// from v3 CLUSTER_AUTHORIZATION_FAILED, as Kafka answers.

import (
	"path/filepath"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/examples/internal/acl"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.DescribeLogDirs, 0, 5, (*Server).handleDescribeLogDirs) }

func (s *Server) handleDescribeLogDirs(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !s.access(r).Allows(opDescribe, clusterRes, acl.ClusterName) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code // v3+; older versions see no dir
		r.Respond(resp)
		return
	}
	if s.cfg.LogDirs == "" {
		r.Respond(resp)
		return
	}
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = s.cfg.LogDirs
	if abs, err := filepath.Abs(s.cfg.LogDirs); err == nil {
		dir.Dir = abs
	}
	dir.TotalBytes, dir.UsableBytes = volumeBytes(dir.Dir)
	for _, t := range s.data.store.Topics() {
		var want []int32 // nil: every partition of the topic
		if req.Topics != nil {
			i := slices.IndexFunc(req.Topics, func(rt kmsg.DescribeLogDirsRequestTopic) bool { return rt.Topic == t.Name })
			if i < 0 {
				continue
			}
			want = req.Topics[i].Partitions
		}
		if dt, ok := describeLogDirTopic(t, want); ok {
			dir.Topics = append(dir.Topics, dt)
		}
	}
	resp.Dirs = append(resp.Dirs, dir)
	r.Respond(resp)
}

// describeLogDirTopic lists t's partitions (those of want, or all when
// want is nil) with their sizes, and reports whether there was one.
func describeLogDirTopic(t *storage.Topic, want []int32) (kmsg.DescribeLogDirsResponseDirTopic, bool) {
	dt := kmsg.NewDescribeLogDirsResponseDirTopic()
	dt.Topic = t.Name
	for _, p := range t.Partitions {
		if want != nil && !slices.Contains(want, p.Index()) {
			continue
		}
		size, err := p.Size()
		if err != nil {
			continue // deleted meanwhile
		}
		dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		dp.Partition, dp.Size = p.Index(), size
		dt.Partitions = append(dt.Partitions, dp)
	}
	return dt, len(dt.Partitions) > 0
}
