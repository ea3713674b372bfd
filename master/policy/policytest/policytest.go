package policytest

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// Start is the fake clock's zero.
var Start = time.Unix(1_000_000, 0)

// Clock is a file's fake clock; it starts at Start.
type Clock struct{ Now time.Time }

// At is the clock's now plus argument k (a duration, 0 when absent).
func (c *Clock) At(a *Args, k string) time.Time { return c.Now.Add(a.Dur(k, 0)) }

// Rel renders t as an offset from Start, "never" for the zero time.
func Rel(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := t.Sub(Start)
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

// Verbs is a file's language: one handler per verb, each rendering its
// outcome.
type Verbs map[string]func(a *Args) string

// Run runs every file of testdata/ as a subtest named after it, each on a
// fresh clock and the verbs fresh(clock) gives, plus "advance by=D".
func Run(t *testing.T, fresh func(clock *Clock) Verbs) {
	t.Helper()
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		clock := &Clock{Now: Start}
		verbs := fresh(clock)
		verbs["advance"] = func(a *Args) string {
			clock.Now = clock.Now.Add(a.Dur("by", 0))
			return "now " + Rel(clock.Now)
		}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			run, ok := verbs[td.Cmd]
			if !ok {
				td.Fatalf(t, "unknown command %s", td.Cmd)
			}
			return run(&Args{t: t, td: td})
		})
	})
}

// Args are one command's arguments: key=value, or a bare key whose value
// is empty.
type Args struct {
	t  *testing.T
	td *datadriven.TestData
}

// arg is argument k's value and whether the command has it; a list in
// parentheses fails the test.
func (a *Args) arg(k string) (string, bool) {
	a.t.Helper()
	for _, c := range a.td.CmdArgs {
		if c.Key != k {
			continue
		}
		if len(c.Vals) > 1 {
			a.Fatalf("argument %s: write a list as %s=a,b, not in parentheses", k, k)
		}
		return strings.Join(c.Vals, ""), true
	}
	return "", false
}

// Fatalf fails the test at the command's position.
func (a *Args) Fatalf(format string, args ...any) {
	a.t.Helper()
	a.td.Fatalf(a.t, format, args...)
}

// Has reports whether the command has argument k.
func (a *Args) Has(k string) bool {
	_, ok := a.arg(k)
	return ok
}

// Str is argument k's value, or def when the command has no argument k.
func (a *Args) Str(k, def string) string {
	if v, ok := a.arg(k); ok {
		return v
	}
	return def
}

// Need is argument k's value; the test fails when the command lacks it.
func (a *Args) Need(k string) string {
	a.t.Helper()
	v, ok := a.arg(k)
	if !ok {
		a.Fatalf("%s needs %s=", a.td.Cmd, k)
	}
	return v
}

// List is argument k split at commas; the test fails when it is absent.
func (a *Args) List(k string) []string { return strings.Split(a.Need(k), ",") }

// parsed is argument k parsed by parse, def when absent; the test fails on
// a value parse refuses.
func parsed[T any](a *Args, k string, def T, parse func(string) (T, error)) T {
	a.t.Helper()
	s, ok := a.arg(k)
	if !ok {
		return def
	}
	v, err := parse(s)
	if err != nil {
		a.Fatalf("%s=%q: %v", k, s, err)
	}
	return v
}

// Int is argument k as an integer, def when absent.
func (a *Args) Int(k string, def int64) int64 {
	return parsed(a, k, def, func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) })
}

// Float is argument k as a float, def when absent.
func (a *Args) Float(k string, def float64) float64 {
	return parsed(a, k, def, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
}

// Dur is argument k as a time.Duration ("1.5s", "250ms"), def when absent.
func (a *Args) Dur(k string, def time.Duration) time.Duration {
	return parsed(a, k, def, time.ParseDuration)
}

// Uints is argument k as a comma-separated list of unsigned integers; the
// test fails when it is absent.
func (a *Args) Uints(k string) []uint64 {
	a.t.Helper()
	var out []uint64
	for _, f := range a.List(k) {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			a.Fatalf("%s: %q: %v", k, f, err)
		}
		out = append(out, v)
	}
	return out
}
