package cliflag

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// EnvString is the environment variable name, or def when it is unset
// or empty.
func EnvString(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

// EnvBool is the boolean in the environment variable name, or def when
// it is unset or empty; a value that is no boolean is reported on stderr
// and def used.
func EnvBool(name string, def bool) bool { return envParse(name, def, "a boolean", strconv.ParseBool) }

// EnvDuration is EnvBool for a duration.
func EnvDuration(name string, def time.Duration) time.Duration {
	return envParse(name, def, "a duration", time.ParseDuration)
}

// EnvInt is EnvBool for an integer.
func EnvInt(name string, def int) int { return envParse(name, def, "an integer", strconv.Atoi) }

func envParse[T any](name string, def T, what string, parse func(string) (T, error)) T {
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return def
	}
	x, err := parse(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sexton: %s=%q is not %s; using %v\n", name, v, what, def)
		return def
	}
	return x
}

// ParseSize reads "4096", "4KiB", "256MiB", "4GiB", "1.5GB".
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   float64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
		{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40}, {"B", 1},
	}
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			f, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), 64)
			// !(f >= 0) refuses NaN as well as negatives; the bound refuses
			// Inf and whatever would overflow an int64.
			if err != nil || !(f >= 0) || f*u.mult >= math.MaxInt64 {
				return 0, fmt.Errorf("size %q: want bytes or a number with a unit such as 4GiB", s)
			}
			return int64(f * u.mult), nil
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q: want bytes or a number with a unit such as 4GiB", s)
	}
	return n, nil
}

// ParseSeconds reads a duration given as a number of seconds ("2.5") or
// as a Go duration ("10s").
func ParseSeconds(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(secs * float64(time.Second)), nil
	}
	return time.ParseDuration(s)
}

// SplitList is the non-empty items of a comma-separated list, trimmed.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// EnvInUsage finds the variable a flag's usage names: "(env NAME)".
var EnvInUsage = regexp.MustCompile(`\benv ((?:SEXTON|MOONCAKE)_[A-Z0-9_]+)`)

// EnvUsage is usage with the flag's environment variable named, for a
// flag defined with envString(env, ...) and the like.
func EnvUsage(env, usage string) string {
	return usage + " (env " + env + ")"
}

// Bind names, for every flag of fs whose usage names no variable, the
// one derive gives it (none: "") in its usage and, with apply, sets the
// flag from it when it is set and not empty. A value the flag does not
// accept is an error naming the variable and the flag.
func Bind(fs *flag.FlagSet, derive func(*flag.Flag) string, apply bool) error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if EnvInUsage.MatchString(f.Usage) {
			return // named where it is defined, and read there
		}
		env := derive(f)
		if env == "" {
			return
		}
		f.Usage = EnvUsage(env, f.Usage)
		if !apply {
			return
		}
		if v, ok := os.LookupEnv(env); ok && v != "" {
			// Value.Set, not fs.Set: the flag does not count as given on
			// the command line (fs.Visit), only its value changes.
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q (for --%s): %v", env, v, f.Name, err))
			}
		}
	})
	return errors.Join(errs...)
}

// Interspersed parses flags that may come before, between or after the
// positional arguments, and returns the positional ones. "--" ends flags.
func Interspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
