package holder

import (
	"os"
	"time"

	"sexton/holder/crashpoint"
)

// followBeforeAck sits between a durable tombstone and its ack: a crash
// there leaves the task pending with the record already tombstoned, so the
// replay after restart must answer AlreadyRemoved.
var followBeforeAck = crashpoint.New("follow.before-ack")

// EnvAckGate names a file path. When set, the holder creates that file
// before every ack and waits until something removes it. Integration tests
// use it to hold a holder between its tombstone and its ack while they
// kill the leader; it is inert when unset.
const EnvAckGate = "SEXTON_TEST_ACK_GATE"

var ackGate = os.Getenv(EnvAckGate)

// waitAckGate blocks while the gate file exists (or until stop closes).
func (s *Service) waitAckGate() {
	followBeforeAck.Hit()
	if ackGate == "" {
		return
	}
	if err := os.WriteFile(ackGate, []byte("waiting\n"), 0o644); err != nil {
		s.log.Warn("ack gate", "error", err)
		return
	}
	for {
		if _, err := os.Stat(ackGate); os.IsNotExist(err) {
			return
		}
		if !s.sleep(20 * time.Millisecond) {
			return
		}
	}
}
