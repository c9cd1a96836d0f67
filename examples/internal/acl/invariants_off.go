//go:build !race && !invariants

package acl

const invariants = false
