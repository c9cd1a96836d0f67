package operation

// Func is an Operation built from functions, for quick use: a test, a tool,
// a one-off wait. A nil function does nothing (a nil Try never completes the
// operation by itself: only its deadline or ForceComplete does).
type Func struct {
	State
	Try      func() bool
	Complete func()
	Expire   func()
}

// NewFunc returns an operation that completes when try reports true, runs
// onComplete once, and onExpiration after it if it expired.
func NewFunc(try func() bool, onComplete, onExpiration func()) *Func {
	return &Func{Try: try, Complete: onComplete, Expire: onExpiration}
}

// TryComplete calls f.Try.
func (f *Func) TryComplete() bool { return f.Try != nil && f.Try() }

// OnComplete calls f.Complete.
func (f *Func) OnComplete() {
	if f.Complete != nil {
		f.Complete()
	}
}

// OnExpiration calls f.Expire.
func (f *Func) OnExpiration() {
	if f.Expire != nil {
		f.Expire()
	}
}
