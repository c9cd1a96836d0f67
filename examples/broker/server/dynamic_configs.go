package server

// What AlterConfigs (33) and IncrementalAlterConfigs (44) share: the
// checks this broker makes itself, with the client's principal (Kafka's
// ConfigAdminManager.preprocess, then the authorization Kafka's
// controller makes), and the decision of the topics that pass, made by
// the active controller, to which any other broker forwards them.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

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
// makes (checkConfigs), then the topics that passed, decided by the
// active controller, here or where this broker forwards them, and every
// resource answered in request order.
func (s *Server) serveConfigs(r *kafkanet.Request, res []configResource, incremental, validateOnly bool, api configsAPI) {
	results, topics := s.checkConfigs(r, res, incremental)
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
		for _, i := range topics {
			a, ok := got[res[i].key()]
			if !ok { // as Kafka's broker answers a resource its controller left out
				a = configResult{code: kerr.UnknownServerError.Code}
			}
			results[i] = a
		}
		answer(resp)
	}
	if len(topics) > 0 && s.forwardToController(r, api.forward(topics), finish) {
		return
	}
	if len(topics) > 0 {
		s.decideTopicConfigs(r, res, topics, incremental, validateOnly, results)
	}
	resp := r.Msg.ResponseKind()
	answer(resp)
	r.Respond(resp)
}

// checkConfigs makes the checks of res this broker makes itself, in
// Kafka's order: a resource listed twice (every listing
// INVALID_REQUEST), a config named twice in one resource, a null value
// but for a DELETE, an unknown operation, a resource type other than a
// topic or a broker (INVALID_REQUEST each); then ALTER_CONFIGS on the
// topic (TOPIC_AUTHORIZATION_FAILED, whether it exists or not) or on the
// cluster for a broker (CLUSTER_AUTHORIZATION_FAILED); a broker resource
// is then answered here (brokerConfigs). It returns every resource's
// answer so far, and the topics that passed, by index, which the
// controller decides.
func (s *Server) checkConfigs(r *kafkanet.Request, res []configResource, incremental bool) ([]configResult, []int) {
	count := make(map[configKey]int, len(res))
	for _, rr := range res {
		count[rr.key()]++
	}
	c := s.access(r)
	results := make([]configResult, len(res))
	var topics []int
	for i, rr := range res {
		err := checkConfigChanges(rr, incremental)
		switch {
		case count[rr.key()] > 1:
			err = fmt.Errorf("%w: Each resource must appear at most once.", errInvalidRequest)
		case err != nil:
		case rr.typ == kmsg.ConfigResourceTypeTopic:
			if code := c.TopicCode(opAlterConfigs, rr.name); code != 0 {
				results[i].code = code
				continue
			}
			topics = append(topics, i)
			continue
		case rr.typ == kmsg.ConfigResourceTypeBroker:
			if code := c.ClusterCode(opAlterConfigs); code != 0 {
				results[i].code = code
				continue
			}
			err = s.brokerConfigs(rr)
		case rr.typ == kmsg.ConfigResourceTypeGroupConfig:
			if !c.Allows(opAlterConfigs, groupResource, rr.name) {
				results[i].code = kerr.GroupAuthorizationFailed.Code
				continue
			}
			err = s.share.configs.alter(rr, incremental) // share_configs.go
		default:
			err = fmt.Errorf("%w: Unknown resource type %d", errInvalidRequest, rr.typ)
		}
		results[i] = configResultOf(err)
	}
	return results, topics
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

// brokerConfigs answers a broker resource. This broker has no dynamic
// broker configs: every setting is a flag read at start (DescribeConfigs
// lists them STATIC_BROKER_CONFIG, read-only), so a change to any is
// refused, INVALID_REQUEST, as Kafka refuses a config that cannot be
// updated dynamically (KAFKA-13609 keeps that code); a resource that
// changes nothing is answered without an error, there being nothing
// dynamic to replace. The resource must name this broker, or be empty
// (the cluster's default), as Kafka checks.
func (s *Server) brokerConfigs(rr configResource) error {
	if rr.name != "" {
		id, err := strconv.ParseInt(rr.name, 10, 32)
		switch {
		case err != nil:
			return fmt.Errorf("%w: Node id must be an integer, but it is: %s", errInvalidRequest, rr.name)
		case int32(id) != s.cfg.NodeID:
			return fmt.Errorf("%w: Unexpected broker id, expected %d, but received %s", errInvalidRequest, s.cfg.NodeID, rr.name)
		}
	}
	if len(rr.changes) == 0 {
		return nil
	}
	names := make([]string, 0, len(rr.changes))
	for _, c := range rr.changes {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	return fmt.Errorf("%w: Cannot update these configs dynamically: %s: this broker has no dynamic broker configs; "+
		"set them with its flags of the same names (--%s ...) and restart it", errInvalidRequest, strings.Join(names, ", "), names[0])
}

// decideTopicConfigs has the active controller decide the topics of res
// listed in topics (each listed once: checkConfigs refused duplicates),
// their values checked against this broker's storage (TopicConfig.With:
// an unknown name or a bad value is INVALID_CONFIG with its message),
// and answers each in results.
func (s *Server) decideTopicConfigs(r *kafkanet.Request, res []configResource, topics []int, incremental, validateOnly bool, results []configResult) {
	specs := make([]controller.ConfigsSpec, len(topics))
	for j, i := range topics {
		spec := controller.ConfigsSpec{Topic: res[i].name, Incremental: incremental}
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
	defaults := s.data.store.TopicDefaults()
	check := func(_ string, configs map[string]string) error {
		_, err := defaults.WithConfigs(configs)
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), controllerTimeout)
	defer cancel()
	errs, err := s.ctrl().AlterTopicConfigs(ctx, specs, validateOnly, check)
	for j, i := range topics {
		e := err
		if e == nil {
			e = errs[j]
		}
		switch {
		case e != nil && !errors.Is(e, metadata.ErrUnknownTopic):
			r.Logger().Info("topic configs not changed", zap.String("topic", res[i].name), zap.Error(e))
		case e == nil && !validateOnly:
			r.Logger().Info("changed topic configs", zap.String("topic", res[i].name), zap.Bool("incremental", incremental))
		}
		results[i] = configResultOf(e)
	}
}
