package watchers

import "errors"

// ErrNoKeys is returned by Watch when given no key: nothing could ever
// complete the operation but ForceComplete.
var ErrNoKeys = errors.New("watchers: an operation needs at least one key")
