package server

import (
	"context"
	"crypto/tls"
	"time"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
	"github.com/gopurgatory/purgatory/examples/internal/sasl"
	"github.com/gopurgatory/purgatory/examples/tlsfiles"
)

// imageCredentials is the SASL listeners' credential store: the SCRAM
// credentials of the metadata image this broker has applied, so that a
// credential altered on the controller authenticates here once the
// record reaches this broker.
type imageCredentials struct{ s *Server }

func (c imageCredentials) Credential(user, mechanism string) (sasl.Credential, bool) {
	return c.s.image().Credential(user, mechanism)
}

// securityOptions returns the network layer's SASL option for cfg's
// listeners, if any of them authenticates, and the TLS configuration of
// those that speak TLS.
func (s *Server) securityOptions(specs []kafkanet.ListenerConfig) ([]kafkanet.Option, *tls.Config, error) {
	var (
		opts   []kafkanet.Option
		tlsCfg *tls.Config
	)
	for _, l := range specs {
		if l.Protocol.SASL() && opts == nil {
			a, err := sasl.New(imageCredentials{s}, s.cfg.SASLMechanisms...)
			if err != nil {
				return nil, nil, err
			}
			opts = append(opts, kafkanet.WithSASL(a, s.cfg.FailedAuthDelay, s.cfg.ReauthMax))
		}
		if l.Protocol.TLS() && tlsCfg == nil {
			var err error
			tlsCfg, err = tlsfiles.ServerConfig(tlsfiles.Files{Keystore: s.cfg.Keystore, Truststore: s.cfg.Truststore,
				ClientAuth: s.cfg.ClientAuth}, s.log)
			if err != nil {
				return nil, nil, err
			}
		}
	}
	return opts, tlsCfg, nil
}

// scramBootstrapRetry is how often a broker given AddScram looks again
// whether its credentials are committed, or it can commit them.
const scramBootstrapRetry = 100 * time.Millisecond

// bootstrapScram creates the AddScram credentials that do not exist yet,
// once this broker is the active controller, or sees them committed by
// the one that is: on a goroutine of the membership's, until done or
// Close. Every broker of a cluster is given the same AddScram, and the
// controller makes each credential once (Controller.CreateScram), so
// that the brokers that derived theirs before they saw another's commit
// change nothing. Each broker logs, at info, when it holds them all: from
// then on its SASL listeners authenticate their users.
func (s *Server) bootstrapScram(entries []scramBootstrap) {
	if len(entries) == 0 {
		return
	}
	s.member.Go(func(ctx context.Context) {
		t := time.NewTicker(scramBootstrapRetry)
		defer t.Stop()
		for {
			var missing []metadata.ScramChange
			im := s.image()
			for _, e := range entries {
				if _, ok := im.Credential(e.user, e.mechanism); ok {
					continue
				}
				cred, err := sasl.NewCredential(e.mechanism, e.password, e.iterations)
				if err != nil {
					s.log.Error("add-scram: cannot derive a credential", zap.String("user", e.user), zap.Error(err))
					return
				}
				missing = append(missing, metadata.ScramChange{User: e.user, Mechanism: e.mechanism, Credential: &cred})
			}
			if len(missing) == 0 {
				s.log.Info("add-scram: credentials in the metadata log", zap.Int("credentials", len(entries)))
				return
			}
			if s.ctrl().IsActive() {
				if n, err := s.ctrl().CreateScram(ctx, missing); err == nil && n > 0 {
					s.log.Info("add-scram: credentials created", zap.Int("credentials", n))
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
}

// interBrokerTLS returns the TLS the brokers of a cluster speak between
// them when their inter-broker listener is SSL, nil otherwise: the
// peers' clients and the quorum's voters dial with the truststore and
// this broker's keystore (its certificate is its principal at the
// others), and the quorum accepts only voters whose certificate the
// truststore verifies. The keystore is read once for dialing (a rotated
// one reaches the peers' connections at the next restart).
func (s *Server) interBrokerTLS() (peer, quorum *tls.Config, err error) {
	if s.cfg.Cluster == "" || s.ln.Protocol() != kafkanet.SSL {
		return nil, nil, nil
	}
	files := tlsfiles.Files{Keystore: s.cfg.Keystore, Truststore: s.cfg.Truststore}
	if peer, err = tlsfiles.ClientConfig(files); err != nil {
		return nil, nil, err
	}
	files.ClientAuth = "required"
	if quorum, err = tlsfiles.ServerConfig(files, s.log); err != nil {
		return nil, nil, err
	}
	return peer, quorum, nil
}
