// Package test holds the end-to-end tests of the example broker: each test
// starts a broker in-process on a loopback port and drives it with real
// Kafka clients (franz-go's kgo) and with raw kmsg requests where a test
// needs exact control of the wire.
package test
