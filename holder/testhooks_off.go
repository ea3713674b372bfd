//go:build !testhooks

package holder

// testHooks is empty in a release build: no test can set a hook.
type testHooks struct{}

// testHook does nothing in a release build.
func (s *Store) testHook(string) {}

// waitAckGate does nothing in a release build: SEXTON_TEST_ACK_GATE is
// never read.
func (s *Service) waitAckGate() {}

// syncSkipped is false in a release build: every fsync is issued and
// SEXTON_TEST_SKIP_SYNC is never read.
func syncSkipped(string) bool { return false }
