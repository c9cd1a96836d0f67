// Package sasl is the server side of the SASL mechanisms the example
// broker and proxy accept (Kafka's SaslServer implementations): PLAIN and
// SCRAM-SHA-256/512 (RFC 5802, through github.com/xdg-go/scram; no
// hand-written SCRAM).
//
// Credentials are Kafka's salted SCRAM records (UserScramCredentialRecord:
// a salt, an iteration count, the stored key and the server key), never a
// password: NewCredential derives one from a password as Kafka's
// `kafka-storage format --add-scram` does, FromSalted from the salted
// password an AlterUserScramCredentials request carries. A Store looks
// them up; the broker's is its metadata image.
//
// PLAIN checks the password it is given against the user's SCRAM
// credential (SHA-512's, else SHA-256's): one store serves both
// mechanisms, and no password is ever kept. It costs one PBKDF2 at the
// credential's iteration count per authentication; SCRAM costs the server
// three HMACs and a hash (the client pays the PBKDF2).
//
// An Authenticator is safe for concurrent use; each Exchange is one
// connection's conversation, used by one goroutine.
package sasl
