package cluster

import (
	"fmt"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// peerLogger is the kgo logger of this broker's clients of its peers. It
// passes kgo's errors only (a connection refused or cut, a request
// failed), at WARN: each is also returned to the request that met it,
// which retries or reports it where it was made. Once the member is
// closing, they are INFO: its peers are going too, in a cluster's clean
// stop, and failing to reach them is expected.
type peerLogger struct {
	log     *zap.Logger
	closing *atomic.Bool
}

func (peerLogger) Level() kgo.LogLevel { return kgo.LogLevelError }

func (l peerLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lvl := zapcore.WarnLevel
	if l.closing.Load() || level > kgo.LogLevelError {
		lvl = zapcore.InfoLevel
	}
	ce := l.log.Check(lvl, msg)
	if ce == nil {
		return
	}
	fields := make([]zap.Field, 0, len(keyvals)/2)
	for i := 0; i+1 < len(keyvals); i += 2 {
		fields = append(fields, zap.Any(fmt.Sprint(keyvals[i]), keyvals[i+1]))
	}
	ce.Write(fields...)
}
