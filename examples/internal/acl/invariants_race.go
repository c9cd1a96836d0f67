//go:build race || invariants

package acl

// invariants turns on the snapshot's self-check (verify) before each
// write is published; the race detector's build tag turns it on, so
// every -race run checks every tree it builds.
const invariants = true
