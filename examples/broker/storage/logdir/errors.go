package logdir

import "errors"

// The errors of the package, checked with errors.Is. A batch found corrupt
// on disk wraps storage.ErrCorruptBatch instead, with the file and the
// position in the message.
var (
	// ErrClosed is returned by a log or a directory used after Close.
	ErrClosed = errors.New("logdir: closed")

	// ErrLocked is wrapped by Open when another process holds the
	// directory (its .lock file).
	ErrLocked = errors.New("logdir: directory in use")

	// ErrInvalidOption is wrapped by Open for an option out of range.
	ErrInvalidOption = errors.New("logdir: invalid option")

	// ErrInconsistent is wrapped when the directory's files disagree with
	// each other: a gap between segments, a node id other than the one
	// the directory was made for, partition directories without a topic
	// catalog. Opening refuses, rather than guess.
	ErrInconsistent = errors.New("logdir: inconsistent directory")
)
