package storage

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

// memCatalog is a Catalog in memory, shared by the stores of a test as a
// directory is by the brokers that open it in turn.
type memCatalog struct {
	mu        sync.Mutex
	specs     map[string]TopicSpec
	failAdd   error
	failDel   error
	addCalled chan struct{} // if set, AddTopic signals it, then waits for release
	release   chan struct{}
}

func newMemCatalog() *memCatalog { return &memCatalog{specs: make(map[string]TopicSpec)} }

func (c *memCatalog) Topics() ([]TopicSpec, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []TopicSpec
	for _, s := range c.specs {
		out = append(out, s)
	}
	return out, nil
}

func (c *memCatalog) AddTopic(spec TopicSpec) error {
	if c.addCalled != nil {
		c.addCalled <- struct{}{}
		<-c.release
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failAdd != nil {
		return c.failAdd
	}
	c.specs[spec.Name] = spec
	return nil
}

func (c *memCatalog) RemoveTopic(name string, id TopicID) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failDel != nil {
		return c.failDel
	}
	if c.specs[name].ID == id {
		delete(c.specs, name)
	}
	return nil
}

// keptLog is a memory log that outlives Close, as a file does; Remove
// deletes it.
type keptLog struct {
	Log
	logs  *keptLogs
	key   string
	state string // "open", "closed" or "removed"
}

func (l *keptLog) Close() error { l.state = "closed"; return nil }
func (l *keptLog) Remove() error {
	l.state = "removed"
	l.logs.mu.Lock()
	delete(l.logs.byKey, l.key)
	l.logs.mu.Unlock()
	return nil
}

// keptLogs opens keptLogs by topic id and partition: a LogOpener whose
// logs survive the store, failing where told.
type keptLogs struct {
	mu    sync.Mutex
	byKey map[string]*keptLog
	fail  map[string]error
}

func newKeptLogs() *keptLogs {
	return &keptLogs{byKey: make(map[string]*keptLog), fail: make(map[string]error)}
}

func (k *keptLogs) open(topic string, id TopicID, partition int32) (Log, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	key := fmt.Sprintf("%s-%d", topic, partition)
	if err := k.fail[key]; err != nil {
		return nil, err
	}
	l := k.byKey[key]
	if l == nil {
		l = &keptLog{Log: NewMemLog(), logs: k, key: key}
		k.byKey[key] = l
	}
	l.state = "open"
	return l, nil
}

func (k *keptLogs) get(key string) *keptLog {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.byKey[key]
}

// storeOn opens a store on a catalog and kept logs, closed at the end of
// the test.
func storeOn(t *testing.T, c *memCatalog, logs *keptLogs) *Store {
	t.Helper()
	s, _ := newTestStore(t, WithCatalog(c), WithLogOpener(logs.open))
	return s
}

func TestCatalogReloadsTopics(t *testing.T) {
	cat, logs := newMemCatalog(), newKeptLogs()
	first, err := New(WithCatalog(cat), WithLogOpener(logs.open), WithRetentionCheckInterval(0))
	require.NoError(t, err)
	cfg := TopicConfig{Retention: time.Hour, RetentionBytes: 1 << 30, MaxMessageBytes: 5000, MinInsyncReplicas: 2}
	a, err := first.CreateTopicSpec(TopicSpec{Name: "a", Partitions: 2, Config: cfg, ReplicationFactor: 3})
	require.NoError(t, err)
	_, err = first.CreateTopic("b", 1, forever)
	require.NoError(t, err)
	now := time.Now().UnixMilli()
	_, err = a.Partitions[1].Append(batchtest.Idempotent(7, 0, 0, now, "x", "y"))
	require.NoError(t, err)
	_, err = a.Partitions[1].Append(batchtest.Idempotent(7, 0, 2, now, "z"))
	require.NoError(t, err)
	_, err = first.DeleteTopic("b")
	require.NoError(t, err)
	require.NoError(t, first.Close())
	assert.Equal(t, "closed", logs.get("a-1").state, "closing the store keeps the logs")
	assert.Nil(t, logs.get("b-0"), "deleting the topic removed its log")

	second := storeOn(t, cat, logs)
	names := []string{}
	for _, topic := range second.Topics() {
		names = append(names, topic.Name)
	}
	assert.Equal(t, []string{"a"}, names)
	again, err := second.Topic("a")
	require.NoError(t, err)
	assert.Equal(t, a.ID, again.ID, "the id survives")
	assert.Equal(t, cfg, again.Config(), "the configs survive")
	assert.Equal(t, int16(3), again.ReplicationFactor, "the replication factor survives")
	assert.Len(t, again.Partitions, 2)
	byID, err := second.TopicByID(a.ID)
	require.NoError(t, err)
	assert.Same(t, again, byID)

	p := again.Partitions[1]
	o, err := p.Offsets()
	require.NoError(t, err)
	assert.Equal(t, Offsets{LogStart: 0, HighWatermark: 3, LastStable: 3, LogEnd: 3}, o)
	res, err := p.Append(batchtest.Idempotent(7, 0, 2, now, "z"))
	require.NoError(t, err)
	assert.Equal(t, AppendResult{BaseOffset: 2, LastOffset: 2, Duplicate: true}, res,
		"a retry of a batch written before the restart is recognised")
	_, err = p.Append(batchtest.Idempotent(7, 0, 5, now, "gap"))
	assert.ErrorIs(t, err, ErrOutOfOrderSequence)
	res, err = p.Append(batchtest.Idempotent(7, 0, 3, now, "next"))
	require.NoError(t, err)
	assert.Equal(t, int64(3), res.BaseOffset, "the producer goes on where it was")
}

func TestCreateTopicRollsBack(t *testing.T) {
	cat, logs := newMemCatalog(), newKeptLogs()
	s := storeOn(t, cat, logs)

	cat.failAdd = errors.New("disk full")
	_, err := s.CreateTopic("a", 1, forever)
	assert.ErrorContains(t, err, "disk full")
	assert.Nil(t, logs.get("a-0"), "nothing opened before the catalog has it")
	cat.failAdd = nil

	logs.fail["b-2"] = errors.New("cannot open")
	_, err = s.CreateTopic("b", 3, forever)
	assert.ErrorContains(t, err, "cannot open")
	specs, _ := cat.Topics()
	assert.Empty(t, specs, "the catalog forgets a topic whose logs failed")
	assert.Nil(t, logs.get("b-0"), "and the logs opened are removed")
	_, err = s.Topic("b")
	assert.ErrorIs(t, err, ErrUnknownTopic)
	delete(logs.fail, "b-2")
	_, err = s.CreateTopic("b", 3, forever)
	require.NoError(t, err, "the name is free again")
}

func TestDeleteTopicKeepsItWhenTheCatalogFails(t *testing.T) {
	cat, logs := newMemCatalog(), newKeptLogs()
	s := storeOn(t, cat, logs)
	topic, err := s.CreateTopic("a", 1, forever)
	require.NoError(t, err)
	cat.failDel = errors.New("read-only")
	_, err = s.DeleteTopic("a")
	assert.ErrorContains(t, err, "read-only")
	_, err = s.DeleteTopicByID(topic.ID)
	assert.ErrorContains(t, err, "read-only")
	assert.False(t, topic.Deleted(), "the topic stays, its logs too")
	assert.Equal(t, "open", logs.get("a-0").state)
}

func TestNewFailsWhenALogCannotOpen(t *testing.T) {
	cat, logs := newMemCatalog(), newKeptLogs()
	first, err := New(WithCatalog(cat), WithLogOpener(logs.open), WithRetentionCheckInterval(0))
	require.NoError(t, err)
	_, err = first.CreateTopic("a", 2, forever)
	require.NoError(t, err)
	require.NoError(t, first.Close())

	logs.fail["a-1"] = errors.New("corrupt")
	_, err = New(WithCatalog(cat), WithLogOpener(logs.open), WithRetentionCheckInterval(0))
	assert.ErrorContains(t, err, "corrupt", "a broker that cannot open a partition refuses to start")
	assert.Equal(t, "closed", logs.get("a-0").state, "what was opened is closed, not removed")
}

// TestCreateTopicOpensLogsOutsideTheLock blocks a creation in its catalog
// write: the name is reserved, lookups go on.
func TestCreateTopicOpensLogsOutsideTheLock(t *testing.T) {
	cat, logs := newMemCatalog(), newKeptLogs()
	s := storeOn(t, cat, logs)
	_, err := s.CreateTopic("other", 1, forever)
	require.NoError(t, err)
	cat.addCalled, cat.release = make(chan struct{}), make(chan struct{})
	created := make(chan error, 1)
	go func() {
		_, err := s.CreateTopic("slow", 1, forever)
		created <- err
	}()
	<-cat.addCalled
	_, err = s.Topic("other")
	assert.NoError(t, err, "lookups are not held up")
	assert.ErrorIs(t, s.CheckCreate("slow", 1), ErrTopicExists, "the name is reserved")
	_, err = s.Topic("slow")
	assert.ErrorIs(t, err, ErrUnknownTopic, "not published yet")
	close(cat.release)
	require.NoError(t, <-created)
	_, err = s.Topic("slow")
	assert.NoError(t, err)
}
