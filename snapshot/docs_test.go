package snapshot

import (
	"bytes"
	"os"
	"regexp"
	"testing"
)

// writtenFormatRef is how the documents name the format snapshots are
// written in: "snapshots are written as format 1.4.0", "It writes format
// **1.4.0**".
var writtenFormatRef = regexp.MustCompile(`(?:written as|writes)\s+format\s+\**(\d+\.\d+\.\d+)`)

// TestDocsNameTheWrittenFormat: every document that says which format
// snapshots are written in names the one NewWriter writes when asked for
// none, so a format bump cannot leave a document behind.
func TestDocsNameTheWrittenFormat(t *testing.T) {
	var buf bytes.Buffer
	if _, err := NewWriter(&buf, Header{}); err != nil {
		t.Fatal(err)
	}
	h, err := decodeHeader(buf.Bytes()[len(Magic)+headerFrameLen:])
	must(t, err)
	for _, p := range []string{"../README.md", "../docs/DESIGN.md", "../fsm/DESIGN.md", "DESIGN.md", "doc.go"} {
		text, err := os.ReadFile(p)
		must(t, err)
		refs := writtenFormatRef.FindAllSubmatch(text, -1)
		if len(refs) == 0 {
			t.Errorf("%s does not say which format snapshots are written in (%q)", p, writtenFormatRef)
		}
		for _, m := range refs {
			if string(m[1]) != h.Format {
				t.Errorf("%s says %q; the writer writes %s", p, m[0], h.Format)
			}
		}
	}
}
