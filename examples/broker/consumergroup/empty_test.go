package consumergroup

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// emptied records WithOnEmpty's calls.
type emptied struct {
	mu     sync.Mutex
	groups []string
}

func (e *emptied) add(g string) { e.mu.Lock(); e.groups = append(e.groups, g); e.mu.Unlock() }

func (e *emptied) get() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.groups...)
}

// TestOnEmpty checks that WithOnEmpty hears of a group left without
// members, by a leave and by a session that expired, and not while a
// member is left; its hook may delete the group (as the broker's does
// when it has no offsets), which then goes from List.
func TestOnEmpty(t *testing.T) {
	topics := newFakeTopics()
	topics.set("t", 2)
	var e emptied
	var c *Coordinator
	c, clk := newTestCoordinator(t, topics, WithOnEmpty(func(g string) {
		e.add(g)
		require.Equal(t, []*kerr.Error{nil}, c.Delete([]string{g}), "called with no lock held: Delete may run")
	}))

	join(t, c, "a", "m1", "t")
	join(t, c, "a", "m2", "t")
	_, err := beat(t, c, "a", "m1", LeaveEpoch, nil)
	require.Nil(t, err)
	assert.Empty(t, e.get(), "m2 is still in")
	_, err = beat(t, c, "a", "m2", LeaveEpoch, nil)
	require.Nil(t, err)
	assert.Equal(t, []string{"a"}, e.get(), "the last member left")
	assert.False(t, c.Has("a"), "the hook deleted it")

	join(t, c, "b", "m1", "t")
	clk.Advance(testSession)
	assert.Equal(t, []string{"a", "b"}, e.get(), "the last member's session expired")
	assert.Empty(t, c.List(), "no group is left to list")
}
