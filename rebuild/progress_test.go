package rebuild

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"sexton/internal/progress"
	"sexton/jsonout"
)

// The rebuild's progress: with --json one snake_case JSON object per line
// (the last one of each phase always printed), plain lines otherwise, a
// bar with the bytes and the count on a terminal; all on the progress
// writer, never stdout.
func TestRebuildProgress(t *testing.T) {
	drive := func(asJSON, terminal bool) string {
		var buf bytes.Buffer
		p := NewRunProgress(progress.Sink{W: &buf, Terminal: terminal}, asJSON)
		for i := 0; i <= 3; i++ {
			p.Scan(i, 3, i*100)
		}
		for i := 0; i <= 4; i++ {
			p.Adopt(i*25, 100, int64(i)<<20, 4<<20)
		}
		p.Done()
		return buf.String()
	}
	out := drive(true, false)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var last map[string]any
	for _, l := range lines {
		last = nil
		if err := json.Unmarshal([]byte(l), &last); err != nil {
			t.Fatalf("--json progress line %q: %v", l, err)
		}
		if err := jsonout.Check([]byte(l)); err != nil {
			t.Fatalf("--json progress line %q: %v", l, err)
		}
	}
	if last["phase"] != "adopt" || last["items_done"] != float64(100) || last["bytes_done"] != float64(4<<20) || last["left_ms"] != float64(0) {
		t.Errorf("last --json line %v, want the finished adoption", last)
	}
	if !strings.Contains(out, `"phase":"scan","holders_scanned":3,"holders_total":3,"records":300`) {
		t.Errorf("no final scan line in %q", out)
	}
	if plain := drive(false, false); !strings.Contains(plain, "rebuild adopt: 100 of 100 items, 4.0 of 4.0 MiB") || strings.Contains(plain, "\r") {
		t.Errorf("plain progress %q", plain)
	}
	if bar := drive(false, true); !strings.Contains(bar, "MiB") || !strings.Contains(bar, "holders") {
		t.Errorf("terminal progress without bytes or holders: %q", bar)
	}
}
