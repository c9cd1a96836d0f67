package apicheck

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestListingForms pins the listing's form on a module made for it: what
// an embedding or an alias of an internal type brings in, generics,
// interfaces with unexported methods, constants.
func TestListingForms(t *testing.T) {
	got, err := listing("testdata/mod", "example.com/mod", nil, "example.com/mod/a")
	require.NoError(t, err)
	want := []string{
		"pkg a, const Typed Kind = 2",
		`pkg a, const Untyped untyped string = "s"`,
		"pkg a, func New[K comparable, V any](int) *List[K, V]",
		// Exported's and sync.Mutex's methods are implied by their
		// "embedded" lines; in.State's and hiddenBase's are listed nowhere
		// else, so they are listed here.
		"pkg a, method (*Exported) FromExported()",
		"pkg a, method (*List[K, V]) Get(K) (V, bool)",
		"pkg a, method (*Public) Promoted()",
		"pkg a, method (Alias) M()",
		"pkg a, method (Kind) String() string",
		"pkg a, method (Public) FromHidden()",
		"pkg a, type Alias = in.Aliased",
		"pkg a, type Alias struct, X string",
		"pkg a, type Exported struct",
		"pkg a, type Kind uint8",
		"pkg a, type List[K comparable, V any] struct",
		"pkg a, type Op interface",
		"pkg a, type Op interface, Run(int, ...string) (bool, error)",
		"pkg a, type Op interface, unexported methods",
		"pkg a, type Public struct",
		"pkg a, type Public struct, Field int",
		"pkg a, type Public struct, Name string",
		"pkg a, type Public struct, Shown int",
		"pkg a, type Public struct, embedded Exported",
		"pkg a, type Public struct, embedded in.State",
		"pkg a, type Public struct, embedded sync.Mutex",
		"pkg a, var Err error",
	}
	assert.Equal(t, want, got, "the listing of testdata/mod/a")
}
