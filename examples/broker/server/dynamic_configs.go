package server

// What AlterConfigs (33) and IncrementalAlterConfigs (44) share: the
// checks this broker makes itself, with the client's principal (Kafka's
// ConfigAdminManager.preprocess, then the authorization Kafka's
// controller makes), and the decision of the resources that pass
// (topics, brokers, groups), made by the active controller, to which any
// other broker forwards them, in one record of the metadata log.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/cluster"
	"github.com/gopurgatory/purgatory/examples/broker/controller"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

// opAlterConfigs is the operation AlterConfigs and IncrementalAlterConfigs
// check.
const opAlterConfigs = kmsg.ACLOperationAlterConfigs

// configResource is one resource of an AlterConfigs or
// IncrementalAlterConfigs request, as both are checked and decided:
// AlterConfigs' configs are SETs, the resource's whole new set.
type configResource struct {
	typ     kmsg.ConfigResourceType
	name    string
	changes []metadata.ConfigChange
}

// configKey names a resource in a response.
type configKey struct {
	typ  kmsg.ConfigResourceType
	name string
}

func (c configResource) key() configKey { return configKey{c.typ, c.name} }

// configResult is one resource's answer.
type configResult struct {
	code int16
	msg  *string
}

// configResultOf is the answer err gives.
func configResultOf(err error) configResult {
	return configResult{code: errorCode(err), msg: errorMessage(err)}
}

// configsAPI is what serveConfigs needs of one of the two APIs. Their
// responses' resources have the same fields, so both are handled as
// AlterConfigs' (a struct conversion).
type configsAPI struct {
	// forward returns r's request with only the resources kept, by
	// index, in order (pick).
	forward func(kept []int) kmsg.Request
	// get and set read and write a response's resources.
	get func(resp kmsg.Response) []kmsg.AlterConfigsResponseResource
	set func(resp kmsg.Response, rs []kmsg.AlterConfigsResponseResource)
}

// pick returns the elements of all at the indexes kept, in order.
func pick[T any](all []T, kept []int) []T {
	out := make([]T, len(kept))
	for j, i := range kept {
		out[j] = all[i]
	}
	return out
}

// serveConfigs answers r, whose resources are res: the checks this broker
// makes (checkConfigs), then the resources that passed, decided by the
// active controller, here or where this broker forwards them, and every
// resource answered in request order.
func (s *Server) serveConfigs(r *kafkanet.Request, res []configResource, incremental, validateOnly bool, api configsAPI) {
	results, decided := s.checkConfigs(r, res, incremental)
	answer := func(resp kmsg.Response) {
		rs := make([]kmsg.AlterConfigsResponseResource, len(res))
		for i, rr := range res {
			rs[i] = kmsg.NewAlterConfigsResponseResource()
			rs[i].ResourceType, rs[i].ResourceName = rr.typ, rr.name
			rs[i].ErrorCode, rs[i].ErrorMessage = results[i].code, results[i].msg
		}
		api.set(resp, rs)
	}
	finish := func(resp kmsg.Response) {
		got := make(map[configKey]configResult)
		for _, sr := range api.get(resp) {
			got[configKey{sr.ResourceType, sr.ResourceName}] = configResult{sr.ErrorCode, sr.ErrorMessage}
		}
		for _, i := range decided {
			a, ok := got[res[i].key()]
			if !ok { // as Kafka's broker answers a resource its controller left out
				a = configResult{code: kerr.UnknownServerError.Code}
			}
			results[i] = a
		}
		answer(resp)
	}
	if len(decided) > 0 && s.forwardToController(r, api.forward(decided), finish) {
		return
	}
	if len(decided) > 0 {
		s.decideConfigs(r, res, decided, incremental, validateOnly, results)
	}
	resp := r.Msg.ResponseKind()
	answer(resp)
	r.Respond(resp)
}

// checkConfigs makes the checks of res this broker makes itself, in
// Kafka's order: a resource listed twice (every listing
// INVALID_REQUEST), a config named twice in one resource, a null value
// but for a DELETE, an unknown operation, a resource type other than a
// topic, a broker or a group (INVALID_REQUEST each); then ALTER_CONFIGS
// on the topic (TOPIC_AUTHORIZATION_FAILED, whether it exists or not), on
// the cluster for a broker (CLUSTER_AUTHORIZATION_FAILED) or on the group
// (GROUP_AUTHORIZATION_FAILED); a broker resource must then name this
// broker, or none, and change only what is dynamic here, with values its
// configs take (checkBrokerResource). It returns every resource's answer
// so far, and the resources that passed, by index, which the controller
// decides.
func (s *Server) checkConfigs(r *kafkanet.Request, res []configResource, incremental bool) ([]configResult, []int) {
	count := make(map[configKey]int, len(res))
	for _, rr := range res {
		count[rr.key()]++
	}
	c := s.access(r)
	results := make([]configResult, len(res))
	var decided []int
	for i, rr := range res {
		err := checkConfigChanges(rr, incremental)
		code := int16(0)
		switch {
		case count[rr.key()] > 1:
			err = fmt.Errorf("%w: Each resource must appear at most once.", errInvalidRequest)
		case err != nil:
		case rr.typ == kmsg.ConfigResourceTypeTopic:
			code = c.TopicCode(opAlterConfigs, rr.name)
		case rr.typ == kmsg.ConfigResourceTypeBroker:
			if code = c.ClusterCode(opAlterConfigs); code == 0 {
				err = s.checkBrokerResource(r, rr)
			}
		case rr.typ == kmsg.ConfigResourceTypeGroupConfig:
			if !c.Allows(opAlterConfigs, groupResource, rr.name) {
				code = kerr.GroupAuthorizationFailed.Code
			}
		default:
			err = fmt.Errorf("%w: Unknown resource type %d", errInvalidRequest, rr.typ)
		}
		switch {
		case code != 0:
			results[i].code = code
		case err != nil:
			results[i] = configResultOf(err)
		default:
			decided = append(decided, i)
		}
	}
	return results, decided
}

// checkConfigChanges refuses a resource that names a config twice, that
// gives a null value to anything but a DELETE (every config of
// AlterConfigs), or an operation Kafka does not have, with Kafka's
// messages.
func checkConfigChanges(rr configResource, incremental bool) error {
	seen := make(map[string]bool, len(rr.changes))
	var nulls []string
	for _, c := range rr.changes {
		if seen[c.Name] {
			return fmt.Errorf("%w: Error due to duplicate config keys", errInvalidRequest)
		}
		seen[c.Name] = true
		if c.Value == nil && (!incremental || c.Op != metadata.ConfigDelete) {
			nulls = append(nulls, c.Name)
		}
		if c.Op < metadata.ConfigSet || c.Op > metadata.ConfigSubtract {
			return fmt.Errorf("%w: Unknown operations type %d", errInvalidRequest, c.Op)
		}
	}
	if len(nulls) > 0 {
		return fmt.Errorf("%w: Null value not supported for : %s", errInvalidRequest, strings.Join(nulls, ", "))
	}
	return nil
}

// checkBrokerResource makes the checks of a broker resource Kafka's
// broker makes (ConfigAdminManager.preprocess): it names this broker, or
// is empty (the cluster's default); a request another broker forwarded
// may name any, which the controller checks is an id. Then the configs it
// sets are dynamic here (checkBrokerNames) and their values are good
// (checkBrokerValues), INVALID_REQUEST otherwise (KAFKA-13609 keeps that
// code).
func (s *Server) checkBrokerResource(r *kafkanet.Request, rr configResource) error {
	if rr.name != "" && !cluster.FromPeer(r.ClientID) {
		id, err := strconv.ParseInt(rr.name, 10, 32)
		switch {
		case err != nil:
			return fmt.Errorf("%w: Node id must be an integer, but it is: %s", errInvalidRequest, rr.name)
		case int32(id) != s.cfg.NodeID:
			return fmt.Errorf("%w: Unexpected broker id, expected %d, but received %s", errInvalidRequest, s.cfg.NodeID, rr.name)
		}
	}
	if err := s.checkBrokerNames(rr.changes); err != nil {
		return err
	}
	set := make(map[string]string)
	for _, c := range rr.changes {
		if c.Op == metadata.ConfigSet {
			set[c.Name] = *c.Value // checkConfigChanges refused nulls
		}
	}
	return s.checkBrokerValues(set)
}

// decideConfigs has the active controller decide the resources of res
// listed in decided (each listed once: checkConfigs refused duplicates),
// in one record, their values checked (checkResourceConfigs), and
// answers each in results.
func (s *Server) decideConfigs(r *kafkanet.Request, res []configResource, decided []int, incremental, validateOnly bool, results []configResult) {
	specs := make([]controller.ConfigsSpec, len(decided))
	for j, i := range decided {
		spec := controller.ConfigsSpec{Resource: metadata.ConfigResource{Type: metadata.ConfigResourceType(res[i].typ), Name: res[i].name},
			Incremental: incremental}
		if incremental {
			spec.Changes = res[i].changes
		} else {
			spec.Configs = make(map[string]string, len(res[i].changes))
			for _, c := range res[i].changes {
				spec.Configs[c.Name] = *c.Value // checkConfigs refused nulls
			}
		}
		specs[j] = spec
	}
	ctx, cancel := context.WithTimeout(context.Background(), controllerTimeout)
	defer cancel()
	errs, err := s.ctrl().AlterConfigs(ctx, specs, validateOnly, s.checkResourceConfigs)
	for j, i := range decided {
		e := err
		if e == nil {
			e = errs[j]
		}
		kind := zap.Stringer("type", kmsg.ConfigResourceType(res[i].typ))
		switch {
		case e != nil && !errors.Is(e, metadata.ErrUnknownTopic):
			r.Logger().Info("configs not changed", kind, zap.String("resource", res[i].name), zap.Error(e))
		case e == nil && !validateOnly:
			r.Logger().Info("changed configs", kind, zap.String("resource", res[i].name), zap.Bool("incremental", incremental))
		}
		results[i] = configResultOf(e)
	}
}

// checkResourceConfigs checks the configs a resource would have, for the
// controller: a topic's against this broker's storage (TopicConfig.With:
// an unknown name or a bad value is INVALID_CONFIG with its message), a
// broker's as its broker checks them (checkBrokerValues:
// INVALID_REQUEST), a group's as Kafka's GroupConfig does
// (checkGroupConfigs: INVALID_CONFIG).
func (s *Server) checkResourceConfigs(res metadata.ConfigResource, configs map[string]string) error {
	switch res.Type {
	case metadata.ConfigResourceTopic:
		_, err := s.data.store.TopicDefaults().WithConfigs(configs)
		return err
	case metadata.ConfigResourceBroker:
		return s.checkBrokerValues(configs)
	case metadata.ConfigResourceGroup:
		return s.checkGroupConfigs(configs)
	}
	return nil
}
