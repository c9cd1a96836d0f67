package timer

import "errors"

var (
	// ErrClosed is returned when a task is scheduled on a Timer that has been
	// closed.
	ErrClosed = errors.New("timer: closed")

	// ErrScheduled is returned by Schedule when the task is already pending;
	// use Reschedule to move a pending task to a new deadline.
	ErrScheduled = errors.New("timer: task already scheduled")

	// ErrFull is returned when scheduling would take the number of pending
	// tasks past the cap set with WithMaxPending.
	ErrFull = errors.New("timer: too many pending tasks")

	// ErrPanicked is wrapped by Periodic.Err after a run panicked, which
	// ended the schedule.
	ErrPanicked = errors.New("timer: periodic task panicked")

	// ErrInvalidConfig is wrapped by New when an option is out of range, and
	// by the periodic schedules for a period that is not positive.
	ErrInvalidConfig = errors.New("timer: invalid configuration")
)
