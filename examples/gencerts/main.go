// Command gencerts makes a test certificate authority and the keystores
// it signs, for the example broker's and proxy's TLS listeners and their
// clients, with Go's crypto/x509 (no openssl):
//
//	go run ./examples/gencerts --dir certs --hosts 127.0.0.1,localhost --clients alice
//
// writes certs/ca.pem (the truststore: ssl.truststore.location),
// certs/server.pem (a keystore for the hosts: ssl.keystore.location, the
// certificate chain and its private key in one PEM file, Kafka's PEM
// keystore) and certs/alice.pem (a client's keystore, whose subject
// CN=alice is its principal on a listener with ssl.client.auth). Files
// that exist are replaced: running it again rotates the certificates,
// which the broker picks up without a restart. For tests and examples:
// the CA's key is not kept.
package main

import (
	"crypto/x509/pkix"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/gopurgatory/purgatory/examples/tlsfiles"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gencerts:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("gencerts", flag.ContinueOnError)
	dir := fs.String("dir", "certs", "directory to write the PEM files to")
	hosts := fs.String("hosts", "127.0.0.1,localhost", "the server certificate's IP addresses and DNS names, comma-separated")
	clients := fs.String("clients", "", "clients to make keystores for, comma-separated (their CN)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		return err
	}
	ca, err := tlsfiles.NewCA("purgatory example CA")
	if err != nil {
		return err
	}
	files := map[string][]byte{"ca.pem": ca.PEM}
	if files["server.pem"], err = ca.Issue(pkix.Name{CommonName: "purgatory"}, split(*hosts)...); err != nil {
		return err
	}
	for _, c := range split(*clients) {
		if files[c+".pem"], err = ca.Issue(pkix.Name{CommonName: c}); err != nil {
			return err
		}
	}
	for name, b := range files {
		p := filepath.Join(*dir, name)
		// Written aside and renamed, so that a broker reloading its
		// keystore never reads half a file.
		if err := os.WriteFile(p+".tmp", b, 0o600); err != nil {
			return err
		}
		if err := os.Rename(p+".tmp", p); err != nil {
			return err
		}
		fmt.Println(p)
	}
	return nil
}

// split splits a comma-separated list, spaces dropped.
func split(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
}
