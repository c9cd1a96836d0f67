package metalog

import (
	"fmt"
	"io"

	"github.com/hashicorp/raft"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
)

// fsm is the Log seen as Raft's state machine: applying a committed
// entry applies its record to the image.
type fsm Log

var _ raft.FSM = (*fsm)(nil)

// Apply applies a committed entry; its return value is the image after it,
// which Propose hands back. An entry that is not a record (it cannot be:
// only Propose writes them) is skipped by every broker alike.
func (f *fsm) Apply(e *raft.Log) any {
	l := (*Log)(f)
	if e.Type != raft.LogCommand {
		return nil
	}
	rec, err := metadata.DecodeRecord(e.Data)
	if err != nil {
		l.cfg.log.Sugar().Errorf("metalog: skipping entry %d: %v", e.Index, err)
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.applyLocked(e.Index, l.image.Load(), rec)
}

// Snapshot captures the image; Persist writes it on another goroutine,
// which is safe: the image is immutable.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	return imageSnapshot{(*Log)(f).image.Load()}, nil
}

// Restore replaces the image with a snapshot's.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return fmt.Errorf("metalog: reading a snapshot: %w", err)
	}
	im, err := metadata.UnmarshalImage(b)
	if err != nil {
		return err
	}
	l := (*Log)(f)
	l.mu.Lock()
	defer l.mu.Unlock()
	before := l.image.Load()
	l.image.Store(im)
	l.cfg.applied(before, im, nil)
	return nil
}

type imageSnapshot struct{ im *metadata.Image }

func (s imageSnapshot) Persist(sink raft.SnapshotSink) error {
	b, err := metadata.MarshalImage(s.im)
	if err == nil {
		_, err = sink.Write(b)
	}
	if err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (imageSnapshot) Release() {}
