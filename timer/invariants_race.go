//go:build race || invariants

package timer

// invariants turns on the wheel's self-checks; the race detector's build tag
// turns it on, so every -race run checks the structure after each advance.
const invariants = true
