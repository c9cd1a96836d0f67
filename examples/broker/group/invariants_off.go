//go:build !race && !invariants

package group

const invariants = false
