package rebuild

import (
	"encoding/json"
	"fmt"
	"time"

	"sexton/internal/progress"
)

// RunProgress reports Run's scan and adoption: a bar on a terminal, a
// plain line every Sink.PlainEvery otherwise, and as JSON one object per
// line (the command's stdout keeps its one report object).
type RunProgress struct {
	json  bool
	sink  progress.Sink
	start time.Time
	last  time.Time
	bar   *progress.Bar
	phase string
	line  ProgressLine
}

// ProgressLine is one JSON progress line.
type ProgressLine struct {
	Phase          string `json:"phase"`
	HoldersScanned int    `json:"holders_scanned"`
	HoldersTotal   int    `json:"holders_total"`
	Records        int    `json:"records"`
	ItemsDone      int    `json:"items_done"`
	ItemsTotal     int    `json:"items_total"`
	BytesDone      int64  `json:"bytes_done"`
	BytesTotal     int64  `json:"bytes_total"`
	ElapsedMillis  int64  `json:"elapsed_ms"`
	LeftMillis     int64  `json:"left_ms"`
}

// NewRunProgress reports to sink, as JSON lines with asJSON.
func NewRunProgress(sink progress.Sink, asJSON bool) *RunProgress {
	now := time.Now()
	return &RunProgress{json: asJSON, sink: sink, start: now, last: now}
}

func (p *RunProgress) enter(phase string, total int64, unit string) {
	if p.phase == phase {
		return
	}
	p.Done()
	p.phase, p.start, p.last = phase, time.Now(), time.Now()
	p.line = ProgressLine{Phase: phase}
	if !p.json && p.sink.Terminal {
		p.bar = p.sink.New("rebuild "+phase, total, unit)
	}
}

// Scan reports done of total holders scanned, with records read so far.
func (p *RunProgress) Scan(done, total, records int) {
	p.enter("scan", int64(total), "holders")
	p.line.HoldersScanned, p.line.HoldersTotal, p.line.Records = done, total, records
	p.report(int64(done), int64(total), fmt.Sprintf("%d of %d holders scanned, %d records", done, total, records))
}

// Adopt reports done of total items adopted, and their bytes.
func (p *RunProgress) Adopt(done, total int, bytes, totalBytes int64) {
	p.enter("adopt", int64(total), "items")
	p.line.ItemsDone, p.line.ItemsTotal, p.line.BytesDone, p.line.BytesTotal = done, total, bytes, totalBytes
	p.report(int64(done), int64(total), fmt.Sprintf("%d of %d items, %.1f of %.1f MiB", done, total, float64(bytes)/(1<<20), float64(totalBytes)/(1<<20)))
}

func (p *RunProgress) report(done, total int64, text string) {
	elapsed := time.Since(p.start)
	p.line.ElapsedMillis = elapsed.Milliseconds()
	p.line.LeftMillis = 0
	if done > 0 && total > done {
		p.line.LeftMillis = int64(float64(elapsed.Milliseconds()) * float64(total-done) / float64(done))
	}
	if p.bar != nil {
		p.bar.Describe("rebuild " + p.phase + ": " + text)
		if d := done - p.bar.Done(); d > 0 {
			p.bar.Add(d)
		}
		return
	}
	final := done == total
	if !final && time.Since(p.last) < p.sink.PlainEvery && !(p.json && time.Since(p.last) >= time.Second) {
		return
	}
	p.last = time.Now()
	if p.json {
		b, err := json.Marshal(p.line)
		if err == nil {
			fmt.Fprintf(p.sink.W, "%s\n", b)
		}
		return
	}
	fmt.Fprintf(p.sink.W, "rebuild %s: %s, %s left\n", p.phase, text, (time.Duration(p.line.LeftMillis) * time.Millisecond).Round(time.Second))
}

// Done ends the current phase's bar.
func (p *RunProgress) Done() {
	if p.bar != nil {
		p.bar.Finish()
		p.bar = nil
	}
}

// Abort ends the current phase's bar without claiming completion.
func (p *RunProgress) Abort() {
	if p.bar != nil {
		p.bar.Abort()
		p.bar = nil
	}
}
