//go:build !race && !invariants

package timer

const invariants = false
