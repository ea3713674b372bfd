package transport

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// server, connection, pool and cluster client must stop what it started.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
