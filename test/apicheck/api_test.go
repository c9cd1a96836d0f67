package apicheck

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite api/current.txt from the library packages")

const (
	modPath = "github.com/gopurgatory/purgatory"
	root    = "../.." // the module's root, from this package's directory
	current = "api/current.txt"

	// regenerate is the one command that rewrites the listing; the failure
	// message names it.
	regenerate = "make api"
)

// libraryPackages are the packages whose exported API is the library's.
// The examples, test/ and internal/ are not.
var libraryPackages = []string{"timer", "operation", "watchers", "reaper", "purgatory"}

// header opens every listing, api/current.txt and the api/vX.Y.Z.txt
// copies made at releases.
const header = `# The exported API of github.com/gopurgatory/purgatory's library packages
# (timer, operation, watchers, reaper, purgatory), one line per feature, sorted.
# Written by "make api" (test/apicheck, which fails when the packages and
# api/current.txt differ). api/current.txt is HEAD's; api/vX.Y.Z.txt is a
# copy of it at the release vX.Y.Z. Every change to api/current.txt is an
# exported change: write it in CHANGELOG.md under Unreleased.
`

// TestAPI fails when the library's exported API differs from the listing
// in api/current.txt; with -update it rewrites the listing instead.
func TestAPI(t *testing.T) {
	paths := make([]string, len(libraryPackages))
	for i, p := range libraryPackages {
		paths[i] = modPath + "/" + p
	}
	var buildFlags []string
	if raceEnabled {
		buildFlags = []string{"-race"}
	}
	got, err := listing(root, modPath, buildFlags, paths...)
	require.NoError(t, err, "loading the library packages")
	require.NotEmpty(t, got, "the library exports nothing?")

	file := filepath.Join(root, current)
	if *update {
		var b bytes.Buffer
		b.WriteString(header)
		for _, l := range got {
			b.WriteString(l + "\n")
		}
		require.NoError(t, os.WriteFile(file, b.Bytes(), 0o644))
		t.Logf("wrote %s: %d features", current, len(got))
		return
	}

	data, err := os.ReadFile(file)
	require.NoError(t, err, "reading the listing: run %q to write it", regenerate)
	want := parseListing(data)
	if slices.Equal(want, got) {
		return
	}
	// A plain message rather than testify's diff: the remedy is the point.
	t.Error(mismatch(want, got))
}

// parseListing returns a listing's feature lines, without comments and
// blank lines, in the file's order.
func parseListing(data []byte) []string {
	var lines []string
	for l := range strings.Lines(string(data)) {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		lines = append(lines, l)
	}
	return lines
}

// mismatch says how the packages (got) differ from the listing (want) and
// what to do about it.
func mismatch(want, got []string) string {
	inWant := make(map[string]bool, len(want))
	for _, l := range want {
		inWant[l] = true
	}
	inGot := make(map[string]bool, len(got))
	for _, l := range got {
		inGot[l] = true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the exported API of the library packages differs from %s", current)
	var changed bool
	note := func(sign, l string) {
		if !changed {
			b.WriteString(" (- listed, gone from the code; + new in the code, not listed):\n")
			changed = true
		}
		fmt.Fprintf(&b, "\t%s %s\n", sign, l)
	}
	for _, l := range want {
		if !inGot[l] {
			note("-", l)
		}
	}
	for _, l := range got {
		if !inWant[l] {
			note("+", l)
		}
	}
	if !changed {
		b.WriteString(": the same lines, but not in the order (or with duplicates) the generator writes\n")
	}
	fmt.Fprintf(&b, "An exported change must be deliberate and written down. If this one is:\n"+
		"\t1. run %q to regenerate %s (it runs go test ./test/apicheck -run TestAPI -update);\n"+
		"\t2. write the change in CHANGELOG.md under Unreleased (Added, Changed, Deprecated, Removed);\n"+
		"\t   a removed or changed line breaks callers: say what to use instead.\n"+
		"If it is not, undo the change to the exported API.", regenerate, current)
	return b.String()
}
