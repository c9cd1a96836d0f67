package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Files names a TLS configuration's files, Kafka's settings.
type Files struct {
	Keystore   string // ssl.keystore.location: certificate chain and private key, PEM
	Truststore string // ssl.truststore.location: CA certificates, PEM; empty: the system's
	ClientAuth string // ssl.client.auth: none (default), requested, required
}

// clientAuth reads ssl.client.auth.
func clientAuth(s string) (tls.ClientAuthType, error) {
	switch strings.ToLower(s) {
	case "", "none":
		return tls.NoClientCert, nil
	case "requested":
		return tls.VerifyClientCertIfGiven, nil
	case "required":
		return tls.RequireAndVerifyClientCert, nil
	}
	return 0, fmt.Errorf("ssl.client.auth %q: want none, requested or required", s)
}

// reloadCheck is how often, at most, the files are looked at again.
const reloadCheck = time.Second

// ServerConfig returns the TLS configuration of a server listener from
// f, reloading the files when they change (see the package
// documentation). The keystore is required; a truststore is required
// with client authentication.
func ServerConfig(f Files, log *zap.Logger) (*tls.Config, error) {
	cfg, _, err := serverConfig(f, log)
	return cfg, err
}

// serverConfig is ServerConfig, with the reloader behind it.
func serverConfig(f Files, log *zap.Logger) (*tls.Config, *reloader, error) {
	auth, err := clientAuth(f.ClientAuth)
	if err != nil {
		return nil, nil, err
	}
	if f.Keystore == "" {
		return nil, nil, errors.New("ssl.keystore.location: empty, and a TLS listener needs a certificate")
	}
	if auth != tls.NoClientCert && f.Truststore == "" {
		return nil, nil, fmt.Errorf("ssl.client.auth %s needs ssl.truststore.location", f.ClientAuth)
	}
	if log == nil {
		log = zap.NewNop()
	}
	r := &reloader{files: f, auth: auth, log: log, now: time.Now}
	if err := r.load(); err != nil {
		return nil, nil, err
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return r.current(), nil
		},
	}, r, nil
}

// ClientConfig returns the TLS configuration of a client from f: its
// truststore (the system's if empty) and, if given, its keystore, for
// mutual TLS. It is read once.
func ClientConfig(f Files) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.Truststore != "" {
		pool, err := readPool(f.Truststore)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if f.Keystore != "" {
		cert, err := readKeystore(f.Keystore)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// reloader holds the last configuration read from its files.
type reloader struct {
	files Files
	auth  tls.ClientAuthType
	log   *zap.Logger
	now   func() time.Time // time.Now but in tests

	mu      sync.Mutex // guards the following
	cfg     *tls.Config
	stamp   string    // the files' modification times and sizes when read
	checked time.Time // when the files were last looked at
}

// current returns the configuration, reading the files again first if
// they changed since last looked at, no more than once per reloadCheck.
func (r *reloader) current() *tls.Config {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := r.now(); now.Sub(r.checked) >= reloadCheck {
		r.checked = now
		if stamp := r.stampOf(); stamp != r.stamp {
			if err := r.loadLocked(stamp); err != nil {
				r.stamp = stamp // logged once per change
				r.log.Error("TLS files changed but cannot be used; keeping the last good ones", zap.Error(err))
			} else {
				r.log.Info("TLS files reloaded", zap.String("ssl.keystore.location", r.files.Keystore))
			}
		}
	}
	return r.cfg
}

func (r *reloader) load() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checked = r.now()
	return r.loadLocked(r.stampOf())
}

func (r *reloader) loadLocked(stamp string) error {
	cert, err := readKeystore(r.files.Keystore)
	if err != nil {
		return err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, ClientAuth: r.auth}
	if r.files.Truststore != "" {
		if cfg.ClientCAs, err = readPool(r.files.Truststore); err != nil {
			return err
		}
	}
	r.cfg, r.stamp = cfg, stamp
	return nil
}

// stampOf identifies the files' versions by modification time and size.
func (r *reloader) stampOf() string {
	var b strings.Builder
	for _, name := range []string{r.files.Keystore, r.files.Truststore} {
		if name == "" {
			continue
		}
		if st, err := os.Stat(name); err == nil {
			fmt.Fprintf(&b, "%d/%d;", st.ModTime().UnixNano(), st.Size())
		} else {
			b.WriteString("missing;")
		}
	}
	return b.String()
}

func readKeystore(name string) (tls.Certificate, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("ssl.keystore.location: %w", err)
	}
	cert, err := tls.X509KeyPair(b, b) // one PEM file: the chain and the key
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("ssl.keystore.location %s: %w", name, err)
	}
	return cert, nil
}

func readPool(name string) (*x509.CertPool, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("ssl.truststore.location: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("ssl.truststore.location %s: no PEM certificate in it", name)
	}
	return pool, nil
}
