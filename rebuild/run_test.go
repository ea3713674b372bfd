package rebuild

import (
	"strings"
	"testing"

	"sexton/fsm"
)

// A batch size outside what one Raft entry takes is refused before the
// cluster is asked anything (Env.Call is nil here).
func TestRunRefusesABadBatch(t *testing.T) {
	for _, b := range []int{0, -1, fsm.MaxRebuildItems + 1} {
		if _, err := Run(Env{}, RunOptions{Batch: b}); err == nil || !strings.Contains(err.Error(), "--batch") {
			t.Errorf("batch %d: %v, want a refusal naming --batch", b, err)
		}
	}
}
