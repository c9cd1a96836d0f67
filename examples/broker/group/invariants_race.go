//go:build race || invariants

package group

// invariants turns on the groups' self-checks; the race detector's build
// tag turns it on, so every -race run checks a group each time a section
// under its mutex ends.
const invariants = true
