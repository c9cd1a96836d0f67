package server

// AlterUserScramCredentials: v0 (KIP-554).
//
// Sets and removes users' SCRAM credentials, which the SASL listeners
// authenticate against (package sasl): each upsertion carries a salted
// password, from which the stored and server keys are derived here, as
// Kafka's controller does; the password itself never reaches the broker.
// The active controller commits the changes to the metadata log, which
// every broker applies, so a new credential authenticates on every broker
// once its image has it; another broker forwards the request to it and
// relays its answer (atController), as Kafka 4's brokers do. Kafka's checks and codes, per user: an empty name or an iteration
// count outside 4096..16384 is UNACCEPTABLE_CREDENTIAL, a mechanism other
// than SCRAM-SHA-256/512 UNSUPPORTED_SASL_MECHANISM, a user named twice
// for one mechanism DUPLICATE_RESOURCE, a deletion of a credential that
// does not exist RESOURCE_NOT_FOUND; a user with an error has none of its
// changes applied.
//
// Authorization (authz.go): ALTER on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED for every user.

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/controller"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
	"github.com/gopurgatory/purgatory/examples/internal/sasl"
)

func init() {
	serve(kmsg.AlterUserSCRAMCredentials, 0, 0, (*Server).handleAlterUserScramCredentials)
}

// scramMechanisms are the mechanisms' codes in the SCRAM credential APIs
// (Kafka's ScramMechanism).
var scramMechanisms = map[int8]string{1: sasl.ScramSHA256, 2: sasl.ScramSHA512}

// scramMechanismCode is the code of a mechanism's name.
func scramMechanismCode(name string) int8 {
	for code, n := range scramMechanisms {
		if n == name {
			return code
		}
	}
	return 0
}

// scramRefusal is a user's error in a SCRAM credentials request.
type scramRefusal struct {
	code *kerr.Error
	msg  string
}

func (s *Server) handleAlterUserScramCredentials(r *kafkanet.Request) {
	if s.atController(r) {
		return
	}
	req := r.Msg.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	var (
		order   []string // users, in the request's order
		refused = make(map[string]*scramRefusal)
		seen    = make(map[[2]string]bool)
		changes []metadata.ScramChange
	)
	refuse := func(user string, code *kerr.Error, format string, args ...any) {
		if refused[user] == nil {
			refused[user] = &scramRefusal{code, fmt.Sprintf(format, args...)}
		}
	}
	note := func(user string, mechanism int8) (string, bool) {
		if _, ok := refused[user]; !ok && !seen[[2]string{user, ""}] {
			order = append(order, user)
		}
		seen[[2]string{user, ""}] = true
		name, ok := scramMechanisms[mechanism]
		switch {
		case user == "":
			refuse(user, kerr.UnacceptableCredential, "Username must not be empty")
		case !ok:
			refuse(user, kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism %d", mechanism)
		case seen[[2]string{user, name}]:
			refuse(user, kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
		default:
			seen[[2]string{user, name}] = true
			return name, true
		}
		return "", false
	}
	for _, d := range req.Deletions {
		if name, ok := note(d.Name, d.Mechanism); ok {
			changes = append(changes, metadata.ScramChange{User: d.Name, Mechanism: name})
		}
	}
	for _, u := range req.Upsertions {
		name, ok := note(u.Name, u.Mechanism)
		if !ok {
			continue
		}
		cred, err := sasl.FromSalted(name, u.Salt, u.SaltedPassword, u.Iterations)
		if err != nil {
			refuse(u.Name, kerr.UnacceptableCredential, "%v", err)
			continue
		}
		changes = append(changes, metadata.ScramChange{User: u.Name, Mechanism: name, Credential: &cred})
	}
	var kept []metadata.ScramChange
	for _, c := range changes {
		if refused[c.User] == nil {
			kept = append(kept, c)
		}
	}
	var err error
	if len(kept) > 0 {
		var missing map[string]error
		ctx, cancel := context.WithTimeout(context.Background(), controllerTimeout)
		missing, err = s.ctrl().AlterScram(ctx, kept)
		cancel()
		for user, e := range missing {
			refuse(user, kerr.ResourceNotFound, "%v", e)
		}
	}
	for _, user := range order {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = user
		switch f := refused[user]; {
		case f != nil:
			res.ErrorCode, res.ErrorMessage = f.code.Code, nilIfEmpty(f.msg)
		case err != nil:
			if errors.Is(err, controller.ErrNotController) {
				err = fmt.Errorf("%w: %w", errNotController, err)
			}
			res.ErrorCode, res.ErrorMessage = errorCode(err), errorMessage(err)
		}
		resp.Results = append(resp.Results, res)
	}
	r.Respond(resp)
}
