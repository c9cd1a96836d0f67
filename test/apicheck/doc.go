// Package apicheck holds the test that keeps the library's exported API
// deliberate: TestAPI loads the five library packages (timer, operation,
// watchers, reaper, purgatory) with the type checker and compares what they
// export with the listing committed in api/current.txt. A change to the
// exported API fails the test until the listing is regenerated and the
// change is written in CHANGELOG.md under Unreleased; the listing's diff then
// shows the change in review.
//
// # Regenerating
//
//	make api
//
// writes api/current.txt (it runs go test ./test/apicheck -run TestAPI
// -update) and then reports what changed since the last release: the lines
// of api/current.txt missing from, or new to, the release's listing
// (api/v0.1.0.txt, the newest api/v*.txt), and, when a v0.* tag is in the
// local clone, apidiff's report of compatible and incompatible changes
// between the tag and the working tree. The test itself needs no tag, so it
// runs on any clone.
//
// # The listing
//
// One line per exported feature, sorted, in the spirit of Go's own
// api/go1.*.txt files:
//
//	pkg timer, func New(...Option) (*Timer, error)
//	pkg timer, method (*Timer) Size() int
//	pkg timer, type Stats struct, Pending int64
//	pkg operation, type Operation interface, TryComplete() bool
//	pkg purgatory, const DefaultPurgeInterval untyped int = 1000
//
// Parameter names are left out (renaming one changes no caller); types
// from other packages are qualified by package name. A method promoted
// from an embedded field is listed under the embedding type only when the
// embedded type is not listed itself (an unexported or internal type); an
// exported embedded type's methods are implied by its "embedded" line.
// Lines starting with # are comments.
//
// # Releasing
//
// At a release, copy api/current.txt to api/vX.Y.Z.txt, move CHANGELOG.md's
// Unreleased entries under the new version, and tag: the newest api/v*.txt
// is the baseline make api compares with.
package apicheck
