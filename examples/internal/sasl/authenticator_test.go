package sasl

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// store is a Store in a map, by user and mechanism.
type store map[[2]string]Credential

func (s store) Credential(user, mechanism string) (Credential, bool) {
	c, ok := s[[2]string{user, mechanism}]
	return c, ok
}

func (s store) add(t *testing.T, user, mechanism, password string) {
	c, err := NewCredential(mechanism, password, 0)
	require.NoError(t, err)
	s[[2]string{user, mechanism}] = c
}

// run plays franz-go's client mechanism against a's exchange of the same
// name, as a broker's SaslAuthenticate round trips would.
func run(t *testing.T, a *Authenticator, m kgosasl.Mechanism) (string, error) {
	t.Helper()
	sess, msg, err := m.Authenticate(context.Background(), "127.0.0.1:9092")
	require.NoError(t, err)
	ex, err := a.Start(m.Name())
	require.NoError(t, err)
	for range 4 {
		out, done, err := ex.Step(msg)
		if err != nil {
			return "", err
		}
		clientDone, next, err := sess.Challenge(out)
		require.NoError(t, err, "the client takes the server's answer")
		if done {
			require.True(t, clientDone, "both ends done at once")
			return ex.Principal(), nil
		}
		msg = next
	}
	t.Fatal("the exchange never ended")
	return "", nil
}

func TestMechanismsAgainstFranzGo(t *testing.T) {
	s := store{}
	s.add(t, "alice", ScramSHA256, "alice-secret")
	s.add(t, "bob", ScramSHA512, "bob-secret")
	a, err := New(s, Plain, ScramSHA256, ScramSHA512)
	require.NoError(t, err)

	for _, tc := range []struct {
		name string
		m    kgosasl.Mechanism
		want string // principal, or "" for a refusal
	}{
		{"scram-256", scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism(), "User:alice"},
		{"scram-512", scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism(), "User:bob"},
		{"scram-256 wrong password", scram.Auth{User: "alice", Pass: "nope"}.AsSha256Mechanism(), ""},
		{"scram-256 unknown user", scram.Auth{User: "carol", Pass: "x"}.AsSha256Mechanism(), ""},
		{"scram-512 for a user with only 256", scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism(), ""},
		{"scram-256 other authzid", scram.Auth{User: "alice", Pass: "alice-secret", Zid: "bob"}.AsSha256Mechanism(), ""},
		{"plain against the 256 credential", plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(), "User:alice"},
		{"plain against the 512 credential", plain.Auth{User: "bob", Pass: "bob-secret"}.AsMechanism(), "User:bob"},
		{"plain wrong password", plain.Auth{User: "bob", Pass: "alice-secret"}.AsMechanism(), ""},
		{"plain unknown user", plain.Auth{User: "carol", Pass: "x"}.AsMechanism(), ""},
		{"plain other authzid", plain.Auth{Zid: "bob", User: "alice", Pass: "alice-secret"}.AsMechanism(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := run(t, a, tc.m)
			if tc.want == "" {
				assert.ErrorIs(t, err, ErrAuthentication)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestPlainMalformed(t *testing.T) {
	s := store{}
	s.add(t, "alice", ScramSHA256, "pw")
	a, err := New(s, Plain)
	require.NoError(t, err)
	for _, in := range []string{"", "alice", "\x00alice", "\x00\x00pw", "a\x00b\x00c\x00d"} {
		ex, err := a.Start(Plain)
		require.NoError(t, err)
		_, done, err := ex.Step([]byte(in))
		assert.True(t, done)
		assert.ErrorIs(t, err, ErrAuthentication, "%q", in)
		assert.Empty(t, ex.Principal())
	}
}

func TestScramGarbage(t *testing.T) {
	a, err := New(store{}, ScramSHA256)
	require.NoError(t, err)
	for _, in := range []string{"", "garbage", "n,,n=,r=", "y,,n=alice,r=abc"} {
		ex, err := a.Start(ScramSHA256)
		require.NoError(t, err)
		_, done, err := ex.Step([]byte(in))
		assert.True(t, done)
		assert.ErrorIs(t, err, ErrAuthentication, "%q", in)
	}
}

func TestMechanismsEnabled(t *testing.T) {
	_, err := New(store{}, "GSSAPI")
	assert.ErrorIs(t, err, ErrMechanism)
	_, err = New(store{})
	assert.Error(t, err)
	a, err := New(store{}, ScramSHA512)
	require.NoError(t, err)
	assert.Equal(t, []string{ScramSHA512}, a.Mechanisms())
	_, err = a.Start(Plain)
	assert.ErrorIs(t, err, ErrMechanism, "a mechanism not enabled")
}

func TestFromSaltedMatchesNewCredential(t *testing.T) {
	c, err := NewCredential(ScramSHA512, "pw", 8192)
	require.NoError(t, err)
	assert.True(t, c.matches("pw"))
	assert.False(t, c.matches("pW"))
	assert.EqualValues(t, 8192, c.Iterations)
	_, err = FromSalted(ScramSHA256, []byte("salt"), []byte("salted"), 100)
	assert.Error(t, err, "iterations below Kafka's minimum")
	_, err = FromSalted(ScramSHA256, nil, []byte("salted"), 4096)
	assert.Error(t, err, "no salt")
	_, err = NewCredential("SCRAM-SHA-1", "pw", 0)
	assert.ErrorIs(t, err, ErrMechanism)
}

// TestPlainChecksBounded: PLAIN's password checks (a PBKDF2 each) wait
// for a slot: with every slot taken, a check waits until one is free.
func TestPlainChecksBounded(t *testing.T) {
	s := store{}
	s.add(t, "alice", ScramSHA256, "pw")
	synctest.Test(t, func(t *testing.T) {
		a, err := New(s, Plain) // its slots inside the bubble
		require.NoError(t, err)
		for range cap(a.plainSlots) {
			a.plainSlots <- struct{}{}
		}
		done := make(chan error, 1)
		go func() {
			ex, _ := a.Start(Plain)
			_, _, err := ex.Step([]byte("\x00alice\x00pw"))
			done <- err
		}()
		synctest.Wait() // the check is blocked, or done
		select {
		case <-done:
			t.Fatal("a check ran with every slot taken")
		default:
		}
		<-a.plainSlots // one slot free
		require.NoError(t, <-done)
	})
}
