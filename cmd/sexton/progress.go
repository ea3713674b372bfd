package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress reports long operator work (snapshot save and restore, fsck
// over many holders) on stderr, never stdout, so --json output stays one
// JSON value. On a terminal it is a progress bar (schollz/progressbar:
// redraw throttling, byte units, rates and spinners for an unknown total
// are its job, not ours); otherwise, for logs and scripts, a plain line
// every plainEvery, so an operation shorter than that prints nothing.
type progress struct {
	what  string
	bytes bool // count bytes (shown with units) rather than items
	unit  string
	total int64 // < 0: unknown
	done  int64

	bar       *progressbar.ProgressBar // nil unless stderr is a terminal
	w         io.Writer
	start     time.Time
	lastPlain time.Time
}

// Where progress goes and how it decides on a bar; tests replace them.
var (
	progressOut        io.Writer = os.Stderr
	progressIsTerminal           = func() bool { return term.IsTerminal(int(os.Stderr.Fd())) }
	plainEvery                   = 2 * time.Second
)

// newProgress starts reporting what; total < 0 is unknown. unit names the
// items counted ("holders"), or is "" for bytes.
func newProgress(what string, total int64, unit string) *progress {
	p := &progress{what: what, bytes: unit == "", unit: unit, total: total, w: progressOut, start: time.Now()}
	p.lastPlain = p.start
	if progressIsTerminal() {
		opts := []progressbar.Option{
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetDescription(what),
			progressbar.OptionThrottle(100 * time.Millisecond),
			progressbar.OptionShowCount(),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionSpinnerType(14),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(p.w) }),
		}
		if p.bytes {
			opts = append(opts, progressbar.OptionShowBytes(true), progressbar.OptionUseIECUnits(true))
		} else {
			opts = append(opts, progressbar.OptionSetItsString(unit))
		}
		p.bar = progressbar.NewOptions64(total, opts...)
	}
	return p
}

// setTotal learns the total once it is known (a snapshot's size comes
// with its first chunk).
func (p *progress) setTotal(n int64) {
	if p.total == n {
		return
	}
	p.total = n
	if p.bar != nil {
		p.bar.ChangeMax64(n)
	}
}

// describe replaces the text shown before the bar (or in plain lines).
func (p *progress) describe(what string) {
	p.what = what
	if p.bar != nil {
		p.bar.Describe(what)
	}
}

// add counts n more done.
func (p *progress) add(n int64) {
	p.done += n
	if p.bar != nil {
		_ = p.bar.Add64(n)
		return
	}
	if now := time.Now(); now.Sub(p.lastPlain) >= plainEvery {
		p.lastPlain = now
		fmt.Fprintf(p.w, "%s: %s\n", p.what, p.amount())
	}
}

// finish ends the report: the bar completes, and a plain report that
// printed any line prints a last one.
func (p *progress) finish() {
	if p.bar != nil {
		if p.total >= 0 {
			_ = p.bar.Finish()
		} else {
			_ = p.bar.Exit()
			fmt.Fprintln(p.w)
		}
		return
	}
	if p.lastPlain != p.start {
		fmt.Fprintf(p.w, "%s: done, %s in %v\n", p.what, p.count(p.done), time.Since(p.start).Round(time.Millisecond))
	}
}

// abort ends the report without claiming completion.
func (p *progress) abort() {
	if p.bar != nil {
		_ = p.bar.Exit()
		fmt.Fprintln(p.w)
	}
}

func (p *progress) amount() string {
	if p.total < 0 {
		return p.count(p.done)
	}
	pct := 100.0
	if p.total > 0 {
		pct = 100 * float64(p.done) / float64(p.total)
	}
	return fmt.Sprintf("%s of %s (%.0f%%)", p.count(p.done), p.count(p.total), pct)
}

func (p *progress) count(n int64) string {
	if !p.bytes {
		return fmt.Sprintf("%d %s", n, p.unit)
	}
	const mib = 1 << 20
	if n < mib {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/mib)
}

// progressOf is a progress report as packages bench and fsck take it.
type progressOf struct{ p *progress }

func (o progressOf) Add(n int64) { o.p.add(n) }
func (o progressOf) Finish()     { o.p.finish() }
func (o progressOf) Abort()      { o.p.abort() }
