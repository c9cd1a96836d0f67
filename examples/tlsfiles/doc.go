// Package tlsfiles is TLS for the example broker and proxy from PEM
// files, with Kafka's names: a keystore (ssl.keystore.location: the
// certificate chain and its private key in one PEM file, Kafka's PEM
// keystore), a truststore (ssl.truststore.location: the CA certificates
// that sign the peers'), and ssl.client.auth (none, requested, required).
//
// The files are read again when they change (their modification time or
// size, looked at no more than once a second, on a handshake), so that a
// certificate is rotated by replacing its file: connections open stay
// open, new ones get the new certificate. A file that cannot be read or
// parsed keeps the last good one, and the error is logged once per
// change.
//
// CA makes a certificate authority and the certificates it signs, with
// Go's crypto/x509 (no openssl): the example's `gencerts` command and
// the tests use it.
package tlsfiles
