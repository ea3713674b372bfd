package progress

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Sink is where reports go and how they look there.
type Sink struct {
	W          io.Writer
	Terminal   bool          // draw a bar rather than plain lines
	PlainEvery time.Duration // the least time between two plain lines
}

// Stderr is the sink of a command: stderr, a bar when it is a terminal,
// a plain line every two seconds otherwise.
func Stderr() Sink {
	return Sink{W: os.Stderr, Terminal: term.IsTerminal(int(os.Stderr.Fd())), PlainEvery: 2 * time.Second}
}

// Bar reports one operation's progress.
type Bar struct {
	what  string
	bytes bool // count bytes (shown with units) rather than items
	unit  string
	total int64 // < 0: unknown
	done  int64

	bar       *progressbar.ProgressBar // nil unless the sink is a terminal
	sink      Sink
	start     time.Time
	lastPlain time.Time
}

// New starts reporting what; total < 0 is unknown. unit names the items
// counted ("holders"), or is "" for bytes.
func (s Sink) New(what string, total int64, unit string) *Bar {
	p := &Bar{what: what, bytes: unit == "", unit: unit, total: total, sink: s, start: time.Now()}
	p.lastPlain = p.start
	if s.Terminal {
		opts := []progressbar.Option{
			progressbar.OptionSetWriter(s.W),
			progressbar.OptionSetDescription(what),
			progressbar.OptionThrottle(100 * time.Millisecond),
			progressbar.OptionShowCount(),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionSpinnerType(14),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(s.W) }),
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

// SetTotal learns the total once it is known (a snapshot's size comes
// with its first chunk).
func (p *Bar) SetTotal(n int64) {
	if p.total == n {
		return
	}
	p.total = n
	if p.bar != nil {
		p.bar.ChangeMax64(n)
	}
}

// Describe replaces the text shown before the bar (or in plain lines).
func (p *Bar) Describe(what string) {
	p.what = what
	if p.bar != nil {
		p.bar.Describe(what)
	}
}

// Done is how much is counted done.
func (p *Bar) Done() int64 { return p.done }

// Add counts n more done.
func (p *Bar) Add(n int64) {
	p.done += n
	if p.bar != nil {
		_ = p.bar.Add64(n)
		return
	}
	if now := time.Now(); now.Sub(p.lastPlain) >= p.sink.PlainEvery {
		p.lastPlain = now
		fmt.Fprintf(p.sink.W, "%s: %s\n", p.what, p.amount())
	}
}

// Finish ends the report: the bar completes, and a plain report that
// printed any line prints a last one.
func (p *Bar) Finish() {
	if p.bar != nil {
		if p.total >= 0 {
			_ = p.bar.Finish()
		} else {
			_ = p.bar.Exit()
			fmt.Fprintln(p.sink.W)
		}
		return
	}
	if p.lastPlain != p.start {
		fmt.Fprintf(p.sink.W, "%s: done, %s in %v\n", p.what, p.count(p.done), time.Since(p.start).Round(time.Millisecond))
	}
}

// Abort ends the report without claiming completion.
func (p *Bar) Abort() {
	if p.bar != nil {
		_ = p.bar.Exit()
		fmt.Fprintln(p.sink.W)
	}
}

func (p *Bar) amount() string {
	if p.total < 0 {
		return p.count(p.done)
	}
	pct := 100.0
	if p.total > 0 {
		pct = 100 * float64(p.done) / float64(p.total)
	}
	return fmt.Sprintf("%s of %s (%.0f%%)", p.count(p.done), p.count(p.total), pct)
}

func (p *Bar) count(n int64) string {
	if !p.bytes {
		return fmt.Sprintf("%d %s", n, p.unit)
	}
	const mib = 1 << 20
	if n < mib {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/mib)
}

// Reporter is one operation's progress as the packages that run long
// work (bench, fsck) report it; a *Bar is one.
type Reporter interface {
	Add(n int64)
	Finish()
	Abort()
}

// Nothing is the Reporter of work nobody watches.
type Nothing struct{}

// Add does nothing.
func (Nothing) Add(int64) {}

// Finish does nothing.
func (Nothing) Finish() {}

// Abort does nothing.
func (Nothing) Abort() {}
