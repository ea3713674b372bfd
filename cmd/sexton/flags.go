package main

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

func envString(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

func envBool(name string, def bool) bool {
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sexton: %s=%q is not a boolean; using %v\n", name, v, def)
		return def
	}
	return b
}

func envDuration(name string, def time.Duration) time.Duration {
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sexton: %s=%q is not a duration; using %v\n", name, v, def)
		return def
	}
	return d
}

func envInt(name string, def int) int {
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sexton: %s=%q is not an integer; using %d\n", name, v, def)
		return def
	}
	return n
}

// parseSize reads "4096", "4KiB", "256MiB", "4GiB", "1.5GB".
func parseSize(s string) (int64, error) {
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

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Every flag has an environment variable, named in its usage as
// "(env NAME)": either given there where the flag is defined, which then
// reads it for the default itself (envString and envUsage; the servers'
// and the cluster flags' names, SEXTON_MASTERS, the holder's MOONCAKE_*
// with their own parsing), or derived here from the verb and the flag,
// SEXTON_<VERB>_<FLAG> (rm --batch: SEXTON_RM_BATCH), appended to the
// usage and read by parseAll before it parses the command line, so the
// flag wins; a derived variable's value the flag does not accept is a
// usage error. noEnv are the exceptions.

// envInUsage finds the variable a flag's usage names.
var envInUsage = regexp.MustCompile(`\benv ((?:SEXTON|MOONCAKE)_[A-Z0-9_]+)`)

// noEnv are the flags ("VERB --FLAG") without an environment variable,
// and why.
var noEnv = map[string]string{
	"rm --" + confirmAllFlag: "deleting every key is asked for on the command line, never inherited from an environment",
	"rm --all":               "an inherited variable must not widen what rm removes",
	"rm --prefix":            "an inherited variable must not turn rm KEY into a bulk delete",
}

// envUsage is usage with the flag's environment variable named, for a
// flag defined with envString(env, ...) and the like.
func envUsage(env, usage string) string {
	return usage + " (env " + env + ")"
}

// flagEnv is the environment variable of flag f of the FlagSet of verb
// path; "" for the exceptions.
func flagEnv(path string, f *flag.Flag) string {
	if m := envInUsage.FindStringSubmatch(f.Usage); m != nil {
		return m[1]
	}
	if _, ok := noEnv[path+" --"+f.Name]; ok {
		return ""
	}
	name := "SEXTON_" + strings.Join(strings.Fields(path), "_") + "_" + f.Name
	return strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(name))
}

// bindEnv names the derived variable in the usage of every flag that
// names none and, with apply, sets the flag from it when it is set and
// not empty.
func bindEnv(fs *flag.FlagSet, apply bool) error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if envInUsage.MatchString(f.Usage) {
			return // named where it is defined, and read there
		}
		env := flagEnv(fs.Name(), f)
		if env == "" {
			return
		}
		f.Usage = envUsage(env, f.Usage)
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

// parseAll parses flags that may come before, between or after the
// positional arguments, and returns the positional ones. "--" ends flags.
// The flags' environment variables are read first (bindEnv).
func parseAll(fs *flag.FlagSet, args []string) ([]string, error) {
	if err := bindEnv(fs, true); err != nil {
		return nil, usagef("%v", err)
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usagef("%v", err)
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

// parseFlags is fs.Parse with interspersed flags: afterwards fs.Args()
// holds only the positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	pos, err := parseAll(fs, args)
	if err != nil {
		return err
	}
	return fs.Parse(append([]string{"--"}, pos...))
}
