//go:build !race

package apicheck

const raceEnabled = false
