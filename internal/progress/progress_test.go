package progress

import (
	"bytes"
	"strings"
	"testing"
)

// Off a terminal a report is plain lines (here one per Add) and a last
// line with the count; on one it is a bar with the unit, never a plain
// line.
func TestPlainLinesOrABar(t *testing.T) {
	var buf bytes.Buffer
	p := Sink{W: &buf}.New("scan", 3, "holders")
	for range 3 {
		p.Add(1)
	}
	p.Finish()
	out := buf.String()
	for _, want := range []string{"scan: 1 holders of 3 holders (33%)\n", "scan: 3 holders of 3 holders (100%)\n", "scan: done, 3 holders in "} {
		if !strings.Contains(out, want) {
			t.Errorf("plain report %q lacks %q", out, want)
		}
	}
	if p.Done() != 3 {
		t.Errorf("Done() = %d, want 3", p.Done())
	}

	buf.Reset()
	b := Sink{W: &buf}.New("save", -1, "")
	b.Add(3 << 20)
	b.Finish()
	if !strings.Contains(buf.String(), "save: 3.0 MiB\n") {
		t.Errorf("bytes of an unknown total: %q", buf.String())
	}

	buf.Reset()
	bar := Sink{W: &buf, Terminal: true}.New("adopt", 10, "items")
	bar.Add(10)
	bar.Finish()
	if out := buf.String(); !strings.Contains(out, "(10/10)") || strings.Contains(out, "adopt: done") {
		t.Errorf("terminal report %q: want a bar with the count, no plain line", out)
	}
}
