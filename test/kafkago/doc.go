// Package kafkago holds nothing but the module that pins
// github.com/segmentio/kafka-go, whose own tests scripts/kafka-go.sh runs
// against the example broker (`make kafka-go`).
package kafkago

import _ "github.com/segmentio/kafka-go" // the suite's module
