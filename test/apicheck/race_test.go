//go:build race

package apicheck

// raceEnabled is true in a -race build: the listing then loads the packages
// with -race too, and finds the export data the test run built in the cache.
const raceEnabled = true
