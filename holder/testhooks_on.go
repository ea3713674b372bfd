//go:build testhooks

package holder

import (
	"os"
	"strings"
	"time"
)

// testHooks is the store's test hook: a function a test sets to run code
// at a named step (testhooks.go).
type testHooks struct {
	hook func(step string)
}

// testHook runs the test hook, if any, at a named step.
func (s *Store) testHook(name string) {
	if h := s.hook; h != nil {
		h(name)
	}
}

var ackGate = os.Getenv(EnvAckGate)

// waitAckGate blocks while the gate file exists (or until stop closes).
func (s *Service) waitAckGate() {
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

// skippedSyncs is read once from EnvSkipSync: which sync sites this
// process leaves out is a property of the process, like a crash point.
var skippedSyncs = func() map[string]bool {
	out := map[string]bool{}
	for _, n := range strings.Split(os.Getenv(EnvSkipSync), ",") {
		if n = strings.TrimSpace(n); n != "" {
			out[n] = true
		}
	}
	return out
}()

// syncSkipped reports whether the sync site name is left out.
func syncSkipped(name string) bool { return skippedSyncs[name] }
