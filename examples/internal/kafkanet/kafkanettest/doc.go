// Package kafkanettest is a raw Kafka client for tests of servers built on
// package kafkanet, as net/http/httptest is for net/http's: it speaks the
// wire protocol with kmsg only, so that a test sends exactly the request it
// wants (any version, pipelined, malformed, cut short) and sees exactly the
// answer, or the connection closed.
package kafkanettest
