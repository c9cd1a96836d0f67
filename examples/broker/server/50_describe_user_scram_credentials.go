package server

// DescribeUserScramCredentials: v0 (KIP-554).
//
// Describes users' SCRAM credentials as every broker's metadata image
// holds them: for each user, its mechanisms and their iteration counts,
// never a salt or a key. No users (a null list) describes every user with
// a credential; a user named that has none is RESOURCE_NOT_FOUND, one
// named twice DUPLICATE_RESOURCE, as in Kafka.
//
// Authorization (authz.go): DESCRIBE on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED (top level).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() {
	serve(kmsg.DescribeUserSCRAMCredentials, 0, 0, (*Server).handleDescribeUserScramCredentials)
}

func (s *Server) handleDescribeUserScramCredentials(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	users := s.image().ScramUsers()
	byName := make(map[string]metadata.ScramUser, len(users))
	for _, u := range users {
		byName[u.User] = u
	}
	describe := func(u metadata.ScramUser) kmsg.DescribeUserSCRAMCredentialsResponseResult {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = u.User
		for _, c := range u.Credentials {
			info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
			info.Mechanism, info.Iterations = scramMechanismCode(c.Mechanism), c.Iterations
			res.CredentialInfos = append(res.CredentialInfos, info)
		}
		return res
	}
	if req.Users == nil {
		for _, u := range users {
			resp.Results = append(resp.Results, describe(u))
		}
		r.Respond(resp)
		return
	}
	count := make(map[string]int, len(req.Users))
	for _, u := range req.Users {
		count[u.Name]++
	}
	for _, ru := range req.Users {
		if count[ru.Name] == 0 {
			continue // a duplicate, answered once
		}
		u, ok := byName[ru.Name]
		res := describe(u)
		res.User = ru.Name
		switch {
		case count[ru.Name] > 1:
			res = kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
			res.User = ru.Name
			res.ErrorCode, res.ErrorMessage = kerr.DuplicateResource.Code, nilIfEmpty("Cannot describe SCRAM credentials for the same user twice in a single request")
		case !ok:
			res.ErrorCode, res.ErrorMessage = kerr.ResourceNotFound.Code, nilIfEmpty("Attempt to describe a user credential that does not exist")
		}
		count[ru.Name] = 0
		resp.Results = append(resp.Results, res)
	}
	r.Respond(resp)
}
