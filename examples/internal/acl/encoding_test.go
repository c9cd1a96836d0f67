package acl

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var updateSeeds = flag.Bool("update-seeds", false, "rewrite testdata/fuzz/FuzzDecodeBinding from fuzzSeeds")

func encode(t testing.TB, b Binding) []byte {
	t.Helper()
	data, err := b.AppendBinary(nil)
	require.NoError(t, err)
	return data
}

func TestEncodingRoundTrip(t *testing.T) {
	for _, b := range []Binding{
		bind(topic, literal, "payments", alice, opRead, allow),
		bind(topic, prefixed, "pay", WildcardPrincipal, opAll, deny),
		bind(cluster, literal, ClusterName, "User:CN=broker,O=x:y", opClusterAction, allow),
		fromHost(bind(user, literal, Wildcard, alice, kmsg.ACLOperationDescribeTokens, allow), "fe80::1%eth0"),
		bind(group, literal, strings.Repeat("g", 300), alice, opRead, allow), // a two-byte length
	} {
		data := encode(t, b)
		got, err := DecodeBinding(data)
		require.NoError(t, err, "%v", b)
		assert.Equal(t, b, got)
	}
}

func TestEncodingLayout(t *testing.T) {
	data := encode(t, fromHost(bind(topic, prefixed, "ab", "U:c", opRead, deny), "::1"))
	assert.Equal(t, []byte{1, 2, 4, 3, 2, 2, 'a', 'b', 3, 'U', ':', 'c', 3, ':', ':', '1'}, data)
	prefix := []byte("prefix")
	out, err := bind(topic, literal, "t", alice, opRead, allow).AppendBinary(prefix)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(out, prefix), "AppendBinary appends")
}

func TestAppendBinaryRefusesAnInvalidBinding(t *testing.T) {
	out, err := Binding{}.AppendBinary([]byte("x"))
	assert.ErrorIs(t, err, ErrInvalidBinding)
	assert.Equal(t, []byte("x"), out, "dst is returned unchanged")
}

// fuzzSeeds are FuzzDecodeBinding's seeds, valid and corrupt, by the name
// of their file under testdata/fuzz/FuzzDecodeBinding.
func fuzzSeeds(t testing.TB) map[string][]byte {
	valid := encode(t, fromHost(bind(topic, literal, "payments", alice, opRead, allow), "10.0.0.1"))
	long := encode(t, bind(group, prefixed, strings.Repeat("g", 200), WildcardPrincipal, opAll, deny))
	head := valid[:5]
	return map[string][]byte{
		"valid-literal":            valid,
		"valid-prefixed-long-name": long,
		"valid-wildcard":           encode(t, bind(txnID, literal, Wildcard, alice, opWrite, allow)),
		"valid-ipv6":               encode(t, fromHost(bind(cluster, literal, ClusterName, alice, opAlter, deny), "::1")),
		"empty":                    {},
		"short-header":             head[:4],
		"unknown-version":          append([]byte{2}, valid[1:]...),
		"truncated-string":         valid[:len(valid)-1],
		"trailing-byte":            append(bytes.Clone(valid), 0),
		"length-past-end":          append(bytes.Clone(head), 0xff, 0xff, 0xff, 0xff, 0x0f, 'a'),
		"length-overflow":          append(bytes.Clone(head), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
		"length-not-shortest":      append(bytes.Clone(head), 0x81, 0x00, 'a', 1, 'b', 1, '*'),
		"invalid-empty-name":       append(bytes.Clone(head), 0, 10, 'U', 's', 'e', 'r', ':', 'a', 'l', 'i', 'c', 'e', 1, '*'),
		"invalid-resource-type":    append([]byte{1, 1}, valid[2:]...),
		"invalid-host":             append(bytes.Clone(head), 1, 't', 6, 'U', 's', 'e', 'r', ':', 'a', 4, 'h', 'o', 's', 't'),
	}
}

func TestDecodeBindingRefusesCorruptInput(t *testing.T) {
	for name, data := range fuzzSeeds(t) {
		t.Run(name, func(t *testing.T) {
			b, err := DecodeBinding(data)
			if strings.HasPrefix(name, "valid") {
				require.NoError(t, err)
				assert.Equal(t, data, encode(t, b))
				return
			}
			assert.ErrorIs(t, err, ErrCorruptRecord)
			assert.Equal(t, strings.HasPrefix(name, "invalid"), errors.Is(err, ErrInvalidBinding),
				"a binding that decodes but fails validation says why: %v", err)
			assert.Equal(t, Binding{}, b)
		})
	}
}

// TestFuzzSeedsInTestdata keeps testdata/fuzz/FuzzDecodeBinding, which go
// test runs as FuzzDecodeBinding's cases, in step with fuzzSeeds; run
// with -update-seeds to rewrite it.
func TestFuzzSeedsInTestdata(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecodeBinding")
	for name, data := range fuzzSeeds(t) {
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
		path := filepath.Join(dir, name)
		if *updateSeeds {
			require.NoError(t, os.MkdirAll(dir, 0o755))
			require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
			continue
		}
		got, err := os.ReadFile(path)
		require.NoError(t, err, "run go test -run TestFuzzSeedsInTestdata -update-seeds")
		assert.Equal(t, want, string(got), "%s", path)
	}
}

// FuzzDecodeBinding feeds arbitrary bytes to DecodeBinding, as a replayed
// metadata log could. Whatever the bytes, nothing panics and nothing
// allocates past the input; an input accepted is a valid binding and the
// only encoding of it (AppendBinary gives the same bytes back), and the
// binding is one an Authorizer takes and finds again.
func FuzzDecodeBinding(f *testing.F) {
	for _, data := range fuzzSeeds(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := DecodeBinding(data)
		if err != nil {
			require.ErrorIs(t, err, ErrCorruptRecord)
			require.Equal(t, Binding{}, b)
			return
		}
		require.NoError(t, b.Validate())
		again, err := b.AppendBinary(nil)
		require.NoError(t, err)
		require.Equal(t, data, again, "an accepted input is the only encoding of its binding")

		a, err := New()
		require.NoError(t, err)
		added, err := a.Add(b)
		require.NoError(t, err)
		require.Equal(t, []Binding{b}, added)
		found, err := a.Describe(b.Filter())
		require.NoError(t, err)
		require.Equal(t, []Binding{b}, found)
	})
}
