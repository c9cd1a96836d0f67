package goid

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIDIsStableAndDistinct(t *testing.T) {
	self := ID()
	assert.NotZero(t, self)
	assert.Equal(t, self, ID(), "the same goroutine reads the same id")
	other := make(chan uint64)
	go func() { other <- ID() }()
	assert.NotEqual(t, self, <-other, "another goroutine reads another id")
}

func BenchmarkID(b *testing.B) {
	b.ReportAllocs()
	for range b.N {
		_ = ID()
	}
}
