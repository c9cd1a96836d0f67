package timer

import "time"

// A Runner is what a Task runs when it expires.
type Runner interface{ Run() }

// Func adapts a function to a Runner. Converting a func to a Runner does not
// allocate.
type Func func()

// Run calls f.
func (f Func) Run() { f() }

// A Task is an entry of the timing wheel. It is intrusive: embed it in the
// value that owns the deadline (an operation, a session) so that scheduling
// allocates nothing and cancelling unlinks it in O(1). A Task is 48 bytes.
//
// A Task belongs to at most one Timer at a time. Its zero value is not usable;
// call Init once with the Runner, or build it with NewTask.
type Task struct {
	// next and prev link the task into a bucket's circular list; both are nil
	// exactly when the task is not pending. Guarded by its shard's mu (see Timer).
	next, prev *Task
	// tm is the timer the task was last scheduled on. Guarded by its shard's mu (see Timer).
	tm *Timer
	// due is the deadline on tm's clock, in nanoseconds. Guarded by its shard's mu (see Timer).
	due int64
	// r is set once by Init and read-only afterwards.
	r Runner
}

// NewTask returns a task that runs r when it expires.
func NewTask(r Runner) *Task { return &Task{r: r} }

// Init sets what the task runs. Call it once, before the first Schedule; it
// must not be called while the task is pending.
func (t *Task) Init(r Runner) { t.r = r }

// Deadline returns the deadline the task was last scheduled for, on its
// timer's clock. It is for the task's own Run (to measure lateness, say); it
// must not be called concurrently with scheduling the task.
func (t *Task) Deadline() time.Duration { return time.Duration(t.due) }
