package kfakecmp

import (
	"context"
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/gopurgatory/purgatory/examples/broker/server"
	"github.com/gopurgatory/purgatory/examples/tlsfiles"
)

// certsEnv names the directory of the certificates a secure child broker
// serves with (ca.pem, server.pem), made by the benchmark.
const certsEnv = "KFAKECMP_CERTS"

// secureKinds are the brokers and transports the secure benchmarks
// compare, in one run: the example broker in PLAINTEXT and over SASL_SSL
// (SCRAM-SHA-512), kfake over TLS and over SASL_SSL (SCRAM-SHA-256, its
// SASL users' default).
var secureKinds = []string{"purgatory", "purgatory-sasl_ssl", "kfake-tls", "kfake-sasl_ssl"}

// makeCerts writes a CA and a server keystore for 127.0.0.1 to a
// temporary directory, and returns it.
func makeCerts(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	ca, err := tlsfiles.NewCA("kfakecmp CA")
	if err != nil {
		b.Fatal(err)
	}
	ks, err := ca.Issue(pkix.Name{CommonName: "broker"}, "127.0.0.1")
	if err != nil {
		b.Fatal(err)
	}
	for name, data := range map[string][]byte{"ca.pem": ca.PEM, "server.pem": ks} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// startSecure runs kind in this (child) process, with the certificates of
// certsEnv.
func startSecure(t *testing.T, kind string) (string, func()) {
	dir := os.Getenv(certsEnv)
	ks, ca := filepath.Join(dir, "server.pem"), filepath.Join(dir, "ca.pem")
	if kind == "purgatory-sasl_ssl" {
		cfg := server.Default()
		cfg.Listener = "SASL_SSL://127.0.0.1:0"
		cfg.Keystore, cfg.Truststore = ks, ca
		cfg.AddScram = "SCRAM-SHA-512=[name=bench,password=bench-secret]"
		s, err := server.New(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = s.Serve() }()
		return s.Addr().String(), func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = s.Close(ctx)
		}
	}
	tc, err := tlsfiles.ServerConfig(tlsfiles.Files{Keystore: ks}, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(1), kfake.TLS(tc)}
	if kind == "kfake-sasl_ssl" {
		opts = append(opts, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "bench", "bench-secret"))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c.ListenAddrs()[0], c.Close
}

// secureClientOpts are the client options of kind's transport.
func secureClientOpts(b *testing.B, kind, certs string) []kgo.Opt {
	b.Helper()
	if kind == "purgatory" {
		return nil
	}
	tc, err := tlsfiles.ClientConfig(tlsfiles.Files{Truststore: filepath.Join(certs, "ca.pem")})
	if err != nil {
		b.Fatal(err)
	}
	opts := []kgo.Opt{kgo.DialTLSConfig(tc)}
	switch kind {
	case "purgatory-sasl_ssl":
		opts = append(opts, kgo.SASL(scram.Auth{User: "bench", Pass: "bench-secret"}.AsSha512Mechanism()))
	case "kfake-sasl_ssl":
		opts = append(opts, kgo.SASL(scram.Auth{User: "bench", Pass: "bench-secret"}.AsSha256Mechanism()))
	}
	return opts
}

// BenchmarkSecureProduceAcksAll is BenchmarkProduceAcksAll over each of
// secureKinds: what TLS and SASL cost an acks=all producer, against the
// same broker in PLAINTEXT and against kfake over TLS. ns/op is per
// record. The SCRAM credential is ready before the timer starts (the
// example broker creates it at start: the first produce waits for it).
func BenchmarkSecureProduceAcksAll(b *testing.B) {
	certs := makeCerts(b)
	for _, kind := range secureKinds {
		b.Run("broker="+kind, func(b *testing.B) {
			produceAcksAll(b, startBroker(b, kind, certsEnv+"="+certs), secureClientOpts(b, kind, certs)...)
		})
	}
}

// BenchmarkSecureConsume times a consumer's long-poll fetches reading
// b.N 100-byte records, produced before the timer starts, over each of
// secureKinds: ns/op is per record read.
func BenchmarkSecureConsume(b *testing.B) {
	certs := makeCerts(b)
	for _, kind := range secureKinds {
		b.Run("broker="+kind, func(b *testing.B) {
			br := startBroker(b, kind, certsEnv+"="+certs)
			opts := secureClientOpts(b, kind, certs)
			prod, err := kgo.NewClient(append(opts, kgo.SeedBrokers(br.addr), kgo.DefaultProduceTopic("consume"),
				kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MaxBufferedRecords(1<<16), kgo.AllowAutoTopicCreation())...)
			if err != nil {
				b.Fatal(err)
			}
			defer prod.Close()
			ctx := context.Background()
			value := make([]byte, 100)
			warm(b, ctx, prod, value)
			for range b.N {
				prod.Produce(ctx, &kgo.Record{Value: value}, nil)
			}
			if err := prod.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			cons, err := kgo.NewClient(append(opts, kgo.SeedBrokers(br.addr), kgo.ConsumeTopics("consume"),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(5*time.Second))...)
			if err != nil {
				b.Fatal(err)
			}
			defer cons.Close()
			if err := cons.Ping(ctx); err != nil { // connected and authenticated before the timer
				b.Fatal(err)
			}
			u0 := br.usage(b)
			b.ResetTimer()
			for got := 0; got < b.N+1; { // the warm-up record too
				fs := cons.PollFetches(ctx)
				if err := fs.Err0(); err != nil {
					b.Fatal(err)
				}
				got += fs.NumRecords()
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
			u := br.usage(b).sub(u0)
			b.ReportMetric(float64(u.cpu)/float64(b.N), "broker-cpu-ns/record")
		})
	}
}

// BenchmarkScramAuthentication times one connection's authentication
// with SCRAM-SHA-512 over SASL_SSL at the example broker, 4096
// iterations: a new client's dial, TLS handshake, ApiVersions,
// SaslHandshake and two SaslAuthenticate round trips, then a Metadata
// request; ns/op is per connection, the client's PBKDF2 included.
func BenchmarkScramAuthentication(b *testing.B) {
	certs := makeCerts(b)
	for _, kind := range []string{"purgatory", "purgatory-sasl_ssl"} {
		b.Run("broker="+kind, func(b *testing.B) {
			br := startBroker(b, kind, certsEnv+"="+certs)
			opts := append(secureClientOpts(b, kind, certs), kgo.SeedBrokers(br.addr))
			ctx := context.Background()
			ping := func() error {
				cl, err := kgo.NewClient(opts...)
				if err != nil {
					b.Fatal(err)
				}
				defer cl.Close()
				return cl.Ping(ctx)
			}
			// Until the broker's start has created the credential.
			for deadline := time.Now().Add(10 * time.Second); ping() != nil; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					b.Fatal("the credential was never created")
				}
			}
			u0 := br.usage(b)
			b.ResetTimer()
			for range b.N {
				if err := ping(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			u := br.usage(b).sub(u0)
			b.ReportMetric(float64(u.cpu)/float64(b.N), "broker-cpu-ns/conn")
		})
	}
}

// warm creates the topic and opens the connection, retrying while the
// example broker's start is still creating the SCRAM credential.
func warm(b *testing.B, ctx context.Context, cl *kgo.Client, value []byte) {
	b.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			b.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
