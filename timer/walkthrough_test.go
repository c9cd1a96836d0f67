package timer

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The walk-throughs of the design notes, on the manual clock.

// TestLevelsTurn checks the picture with tick 1 and three buckets a level:
// level 1 turns every tick, level 2 every three, level 3 every nine.
func TestLevelsTurn(t *testing.T) {
	// r renders a row of spans relative to c, as the design notes write them.
	r := func(c int64, row []span) string {
		s := ""
		for _, b := range row {
			s += fmt.Sprintf("[c+%d,c+%d]", b.from-c, b.to-c)
		}
		return s
	}
	for _, c := range []int64{0, 27, 270} { // c aligned to level 3's unit, as in the notes
		t.Run(fmt.Sprintf("c=%d", c), func(t *testing.T) {
			tm, clk := newManual(t, time.Duration(c)*time.Millisecond, WithTick(time.Millisecond), WithWheelSize(3))
			// A task due at c+20 needs level 3, which is created on demand.
			require.NoError(t, tm.Schedule(&newRecorder(clk).Task, 20*time.Millisecond))

			steps := []struct {
				name   string
				levels [3]string
			}{
				{"c", [3]string{
					"[c+0,c+0][c+1,c+1][c+2,c+2]",
					"[c+0,c+2][c+3,c+5][c+6,c+8]",
					"[c+0,c+8][c+9,c+17][c+18,c+26]"}},
				{"c+1: level 1 moves and makes [c+3,c+3]", [3]string{
					"[c+1,c+1][c+2,c+2][c+3,c+3]",
					"[c+0,c+2][c+3,c+5][c+6,c+8]",
					"[c+0,c+8][c+9,c+17][c+18,c+26]"}},
				{"c+2", [3]string{
					"[c+2,c+2][c+3,c+3][c+4,c+4]",
					"[c+0,c+2][c+3,c+5][c+6,c+8]",
					"[c+0,c+8][c+9,c+17][c+18,c+26]"}},
				{"c+3: level 2 moves and makes [c+9,c+11]; level 3 stays", [3]string{
					"[c+3,c+3][c+4,c+4][c+5,c+5]",
					"[c+3,c+5][c+6,c+8][c+9,c+11]",
					"[c+0,c+8][c+9,c+17][c+18,c+26]"}},
			}
			for i, step := range steps {
				if i > 0 {
					clk.Advance(time.Millisecond)
				}
				got := tm.layout()
				require.Len(t, got, 3, step.name)
				for lv := range 3 {
					assert.Equal(t, step.levels[lv], r(c, got[lv]), "%s, level %d", step.name, lv+1)
				}
			}
		})
	}
}

// TestCascade follows tasks down the levels with tick 1ms and 20 buckets.
func TestCascade(t *testing.T) {
	type stop struct {
		at          time.Duration // clock reading after advancing
		level, slot int           // where the task is then; level 0: it has run
	}
	tests := []struct {
		name  string
		delay time.Duration
		stops []stop
	}{
		{"28ms", 28 * time.Millisecond, []stop{
			{0, 2, 1},
			{19 * time.Millisecond, 2, 1},
			{20 * time.Millisecond, 1, 8},
			{27 * time.Millisecond, 1, 8},
			{28 * time.Millisecond, 0, -1},
		}},
		{"450ms", 450 * time.Millisecond, []stop{
			{0, 3, 1},
			{399 * time.Millisecond, 3, 1},
			{400 * time.Millisecond, 2, 2},
			{439 * time.Millisecond, 2, 2},
			{440 * time.Millisecond, 1, 10},
			{449 * time.Millisecond, 1, 10},
			{450 * time.Millisecond, 0, -1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tm, clk := newManual(t, 0)
			rec := newRecorder(clk)
			require.NoError(t, tm.Schedule(&rec.Task, tt.delay))
			for _, s := range tt.stops {
				clk.Advance(s.at - clk.Now())
				level, slot := tm.locate(&rec.Task)
				assert.Equal(t, [2]int{s.level, s.slot}, [2]int{level, slot}, "at %v", s.at)
				if s.level == 0 {
					assert.Equal(t, []time.Duration{tt.delay}, rec.ran(), "runs once, at its deadline")
				} else {
					assert.Empty(t, rec.ran(), "not run before its deadline (at %v)", s.at)
				}
				require.NoError(t, tm.check())
			}
		})
	}
}
