// Package authz is how a Kafka server of the examples authorizes a
// request: which operation on which resource each API checks against the
// authorizer (package acl, Kafka's StandardAuthorizer), and which error
// code, where in the response, a denial gets, as Kafka's KafkaApis and
// AuthHelper check. The broker (examples/broker/server, authz.go) and the
// proxy (examples/proxy/server, authz.go) both follow this table: the
// checks on a whole request are here ([Gate], answered with
// [ErrorResponse]); those per topic, group or transactional id run in
// each server's handlers, with the helpers of [Access].
//
// Without an authorizer every check is free and allows: the zero
// [Access] allows everything.
//
// # The checks
//
// Every API is checked with Kafka's operation on Kafka's resource, and a
// denial answered with Kafka's code where Kafka puts it. A check on the
// whole request runs before the handler, and before any routing
// (NOT_COORDINATOR, NOT_CONTROLLER), as Kafka checks before asking its
// coordinators ([Gate]); the others run in the handlers, per topic,
// group or transactional id:
//
//	API                        operation, resource                  denied
//	Produce (0)                WRITE TRANSACTIONAL_ID, if the batches TRANSACTIONAL_ID_AUTHORIZATION_FAILED, every partition
//	                           are transactional
//	                           WRITE TOPIC                          TOPIC_AUTHORIZATION_FAILED, its partitions
//	Fetch (1)                  READ TOPIC                           TOPIC_AUTHORIZATION_FAILED, its partitions
//	  from a replica           CLUSTER_ACTION CLUSTER               TOPIC_AUTHORIZATION_FAILED, every partition (as Kafka)
//	ListOffsets (2)            DESCRIBE TOPIC                       TOPIC_AUTHORIZATION_FAILED, its partitions
//	Metadata (3)               DESCRIBE TOPIC                       all topics: hidden; named: TOPIC_AUTHORIZATION_FAILED
//	  auto-creation            CREATE CLUSTER, else CREATE TOPIC    TOPIC_AUTHORIZATION_FAILED
//	  cluster operations v8-10 DESCRIBE CLUSTER                     0 (no operation)
//	OffsetCommit (8)           READ GROUP                           GROUP_AUTHORIZATION_FAILED, every partition
//	                           READ TOPIC                           TOPIC_AUTHORIZATION_FAILED, its partitions
//	OffsetFetch (9)            DESCRIBE GROUP                       GROUP_AUTHORIZATION_FAILED (top, or the group's from v8)
//	                           DESCRIBE TOPIC                       TOPIC_AUTHORIZATION_FAILED, its partitions; all: hidden
//	FindCoordinator (10)       DESCRIBE GROUP, TRANSACTIONAL_ID     GROUP_/TRANSACTIONAL_ID_AUTHORIZATION_FAILED, per key
//	JoinGroup (11), Heartbeat  READ GROUP                           GROUP_AUTHORIZATION_FAILED
//	(12), LeaveGroup (13),
//	SyncGroup (14)
//	DescribeGroups (15)        DESCRIBE GROUP                       GROUP_AUTHORIZATION_FAILED, per group
//	ListGroups (16)            DESCRIBE CLUSTER, else DESCRIBE GROUP groups not described are hidden
//	CreateTopics (19)          CREATE CLUSTER, else CREATE TOPIC    TOPIC_AUTHORIZATION_FAILED, per topic
//	                           DESCRIBE_CONFIGS TOPIC (v5+)         no configs, topic_config_error_code
//	DeleteTopics (20)          DELETE TOPIC (DESCRIBE, by id)       TOPIC_AUTHORIZATION_FAILED (UNKNOWN_TOPIC_ID), per topic
//	DeleteRecords (21)         DELETE TOPIC                         TOPIC_AUTHORIZATION_FAILED, its partitions
//	InitProducerId (22)        WRITE TRANSACTIONAL_ID               TRANSACTIONAL_ID_AUTHORIZATION_FAILED
//	  without one              IDEMPOTENT_WRITE CLUSTER, else       CLUSTER_AUTHORIZATION_FAILED
//	                           WRITE on some TOPIC
//	OffsetForLeaderEpoch (23)  CLUSTER_ACTION CLUSTER, else         TOPIC_AUTHORIZATION_FAILED, its partitions
//	                           DESCRIBE TOPIC
//	AddPartitionsToTxn (24)    v4+ (brokers): CLUSTER_ACTION        CLUSTER_AUTHORIZATION_FAILED, top
//	                           WRITE TRANSACTIONAL_ID               TRANSACTIONAL_ID_AUTHORIZATION_FAILED, its partitions
//	                           WRITE TOPIC                          TOPIC_AUTHORIZATION_FAILED; others OPERATION_NOT_ATTEMPTED
//	AddOffsetsToTxn (25)       WRITE TRANSACTIONAL_ID, READ GROUP   TRANSACTIONAL_ID_/GROUP_AUTHORIZATION_FAILED
//	EndTxn (26)                WRITE TRANSACTIONAL_ID               TRANSACTIONAL_ID_AUTHORIZATION_FAILED
//	WriteTxnMarkers (27)       CLUSTER_ACTION CLUSTER               CLUSTER_AUTHORIZATION_FAILED, every partition
//	TxnOffsetCommit (28)       WRITE TRANSACTIONAL_ID, READ GROUP   TRANSACTIONAL_ID_/GROUP_AUTHORIZATION_FAILED, every partition
//	                           READ TOPIC                           TOPIC_AUTHORIZATION_FAILED, its partitions
//	DescribeAcls (29)          DESCRIBE CLUSTER                     CLUSTER_AUTHORIZATION_FAILED (no authorizer: SECURITY_DISABLED)
//	CreateAcls (30),           ALTER CLUSTER                        CLUSTER_AUTHORIZATION_FAILED, every entry (no authorizer:
//	DeleteAcls (31)                                                 SECURITY_DISABLED)
//	DescribeConfigs (32)       DESCRIBE_CONFIGS TOPIC, or CLUSTER   TOPIC_/CLUSTER_AUTHORIZATION_FAILED, per resource
//	                           for a broker
//	AlterConfigs (33)          ALTER_CONFIGS TOPIC, or CLUSTER for  TOPIC_/CLUSTER_AUTHORIZATION_FAILED, per resource
//	                           a broker
//	DescribeLogDirs (35)       DESCRIBE CLUSTER                     no log dir; from v3 CLUSTER_AUTHORIZATION_FAILED, top
//	CreatePartitions (37)      ALTER TOPIC                          TOPIC_AUTHORIZATION_FAILED, per topic
//	DeleteGroups (42)          DELETE GROUP                         GROUP_AUTHORIZATION_FAILED, per group
//	ElectLeaders (43)          ALTER CLUSTER                        CLUSTER_AUTHORIZATION_FAILED, top (v1+) and every partition
//	IncrementalAlterConfigs    ALTER_CONFIGS TOPIC, or CLUSTER for  TOPIC_/CLUSTER_AUTHORIZATION_FAILED, per resource
//	(44)                       a broker
//	AlterPartitionReassign...  ALTER CLUSTER                        CLUSTER_AUTHORIZATION_FAILED, top and every partition
//	(45)
//	ListPartitionReassign...   DESCRIBE CLUSTER                     CLUSTER_AUTHORIZATION_FAILED, top
//	(46)
//	OffsetDelete (47)          DELETE GROUP                         GROUP_AUTHORIZATION_FAILED, top
//	                           READ TOPIC                           TOPIC_AUTHORIZATION_FAILED, its partitions
//	DescribeClientQuotas (48)  DESCRIBE_CONFIGS CLUSTER             CLUSTER_AUTHORIZATION_FAILED, top
//	AlterClientQuotas (49)     ALTER_CONFIGS CLUSTER                CLUSTER_AUTHORIZATION_FAILED, every entity
//	DescribeUserScram... (50)  DESCRIBE CLUSTER                     CLUSTER_AUTHORIZATION_FAILED, top
//	AlterUserScram... (51)     ALTER CLUSTER                        CLUSTER_AUTHORIZATION_FAILED, every user
//	AlterPartition (56)        CLUSTER_ACTION CLUSTER               CLUSTER_AUTHORIZATION_FAILED, top
//	DescribeCluster (60)       none (its authorized operations:     0 operations
//	                           DESCRIBE CLUSTER)
//	DescribeProducers (61)     READ TOPIC                           TOPIC_AUTHORIZATION_FAILED, its partitions
//	BrokerRegistration (62)    CLUSTER_ACTION CLUSTER               CLUSTER_AUTHORIZATION_FAILED, top
//	BrokerHeartbeat (63)       CLUSTER_ACTION CLUSTER               CLUSTER_AUTHORIZATION_FAILED, top
//	DescribeTransactions (65)  DESCRIBE TRANSACTIONAL_ID            TRANSACTIONAL_ID_AUTHORIZATION_FAILED, per id;
//	                           DESCRIBE TOPIC                       its topics not described are left out
//	ListTransactions (66)      DESCRIBE TRANSACTIONAL_ID            ids not described are hidden
//	ConsumerGroupHeartbeat     READ GROUP                           GROUP_AUTHORIZATION_FAILED
//	(68)
//	ConsumerGroupDescribe (69) DESCRIBE GROUP                       GROUP_AUTHORIZATION_FAILED, per group
//	DescribeTopicPartitions    DESCRIBE TOPIC                       all topics: hidden; named: TOPIC_AUTHORIZATION_FAILED
//	(75)
//	InitializeShareGroupState  CLUSTER_ACTION CLUSTER               CLUSTER_AUTHORIZATION_FAILED, every partition
//	(83) to ReadShareGroup-
//	StateSummary (87)
//	ApiVersions, SaslHandshake, SaslAuthenticate: none.
//
// An unauthorized topic is answered TOPIC_AUTHORIZATION_FAILED whether it
// exists or not, before any other check of it, so that its existence is
// not disclosed, as Kafka answers. KIP-430's authorized operations
// (Metadata's topics and cluster, DescribeGroups) are the operations
// acl.Supported lists for the resource that the principal is allowed;
// without an authorizer, all of them, as Kafka answers; when not asked
// for, -2147483648.
//
// [Options] reads Kafka's configs that turn an authorizer on
// (authorizer.class.name, super.users, allow.everyone.if.no.acl.found),
// which both servers name as Kafka does.
//
// # Principals
//
// A request's principal is its connection's (package kafkanet):
// User:ANONYMOUS on PLAINTEXT and on SSL without a client certificate,
// User:<subject> with one, User:<name> after SASL; its host is the
// client's IP address ([ClientIP]).
package authz
