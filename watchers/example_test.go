package watchers_test

import (
	"fmt"

	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/watchers"
)

// Watchers alone: waiters by key, answered by events, with no deadline (a
// purgatory adds the deadlines). Here, readers wait for a document to
// reach a version.
func Example() {
	versions := map[string]int{"doc-1": 1}
	w := watchers.New[string](0)

	waitFor := func(doc string, version int) {
		op := operation.NewFunc(
			func() bool { return versions[doc] >= version }, // under the op's lock
			func() { fmt.Printf("%s reached version %d\n", doc, version) },
			nil,
		)
		if done, err := w.Watch(op, doc); err == nil && !done {
			fmt.Printf("waiting for %s version %d\n", doc, version)
		}
	}
	waitFor("doc-1", 1) // true already: answered at once
	waitFor("doc-1", 3)
	waitFor("doc-1", 2)

	versions["doc-1"] = 2 // an event on the key: check its waiters
	w.CheckAndComplete("doc-1")
	versions["doc-1"] = 3
	w.CheckAndComplete("doc-1")
	fmt.Println("still listed:", w.Watched(), "(dropped at the key's next check, or by Purge)")
	w.Purge()
	fmt.Println("after Purge:", w.Watched())
	// Output:
	// doc-1 reached version 1
	// waiting for doc-1 version 3
	// waiting for doc-1 version 2
	// doc-1 reached version 2
	// doc-1 reached version 3
	// still listed: 1 (dropped at the key's next check, or by Purge)
	// after Purge: 0
}
