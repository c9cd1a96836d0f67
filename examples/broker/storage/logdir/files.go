package logdir

import (
	"container/list"
	"errors"
	"fmt"
	"os"
	"sync"
)

// fileCache keeps the .log files of sealed segments open, the least
// recently read closed once more than max are: a sealed segment is only
// read, and most reads are of the active segments, so a broker need not
// hold a file descriptor for every segment it keeps (Kafka does, and needs
// a huge RLIMIT_NOFILE; this broker budgets its descriptors). A file being
// read is never closed under its reader: each read holds a reference
// (acquire, release), and eviction skips what is held, so the cache may
// exceed max by the files being read at once. One cache serves every log
// of a Dir.
//
// A segment is in the cache from when it is sealed (or recovered sealed)
// until it is removed or becomes active again (a truncation): cache is
// set on it then, under its Log's lock held for writing. The fields it
// guards on a cached segment (f, refs, elem) are read and written under
// fileCache.mu only.
//
// Lock order: a Log's mu, then fileCache.mu, a leaf; no file is opened or
// closed under it but on eviction.
type fileCache struct {
	max int // immutable

	mu    sync.Mutex // guards the following, and the cached segments' f, refs and elem
	lru   list.List  // of *segment whose f is open: most recently read first
	opens int        // files opened since the start, for tests
}

func newFileCache(max int) *fileCache { return &fileCache{max: max} }

// add takes s, just sealed or recovered, its .log open read-only, into the
// cache, and closes the least recently read files past max.
func (c *fileCache) add(s *segment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.cache = c
	s.elem = c.lru.PushFront(s)
	c.evictLocked()
}

// acquire returns s's .log, opening it again if the cache closed it, and
// holds it open until release.
func (c *fileCache) acquire(s *segment) (*os.File, error) {
	c.mu.Lock()
	if s.f != nil {
		s.refs++
		c.lru.MoveToFront(s.elem)
		c.mu.Unlock()
		return s.f, nil
	}
	c.mu.Unlock()
	f, err := os.Open(s.path) // outside mu: another log's reads go on
	if err != nil {
		return nil, fmt.Errorf("logdir: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.opens++
	if s.f != nil {
		_ = f.Close() // opened meanwhile by another reader of s
	} else {
		s.f = f
		s.elem = c.lru.PushFront(s)
	}
	s.refs++
	c.evictLocked()
	return s.f, nil
}

// release gives back a file acquired.
func (c *fileCache) release(s *segment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.refs--
	c.evictLocked()
}

// forget takes s out of the cache, closing its file if open: s is being
// removed, or becoming the active segment. The caller holds s's Log's lock
// for writing, so no read of s holds its file.
func (c *fileCache) forget(s *segment) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.cache = nil
	if s.f == nil {
		return nil
	}
	c.lru.Remove(s.elem)
	s.elem = nil
	err := s.f.Close()
	s.f = nil
	if errors.Is(err, os.ErrClosed) {
		err = nil
	}
	return err
}

// open returns how many sealed segment files are open, and how many times
// one was opened again after being closed.
func (c *fileCache) open() (open, reopened int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.opens
}

// evictLocked closes the least recently read files not being read while
// more than max are open.
//
// REQUIRES: c.mu held.
func (c *fileCache) evictLocked() {
	for e := c.lru.Back(); e != nil && c.lru.Len() > c.max; {
		s := e.Value.(*segment)
		prev := e.Prev()
		if s.refs == 0 {
			c.lru.Remove(e)
			s.elem = nil
			_ = s.f.Close() // only read from: nothing to lose
			s.f = nil
		}
		e = prev
	}
}
