package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sexton/internal/cliflag"
)

// verbFlags are the flags of every verb, as its --help registers them.
func verbFlags(t *testing.T) map[string]*flag.FlagSet {
	t.Helper()
	out := map[string]*flag.FlagSet{}
	for _, v := range verbs {
		if _, err := captureHelp(t, append(strings.Fields(v.path), "--help")...); err != nil {
			t.Fatalf("%s --help: %v", v.path, err)
		}
		if fs := flagSets[v.path]; fs != nil {
			out[v.path] = fs
		}
	}
	return out
}

// TestEveryFlagHasAnEnvironmentVariable: every flag of every verb names
// its environment variable in its usage, "(env NAME)", except the ones
// listed here, each with the reason it has none.
func TestEveryFlagHasAnEnvironmentVariable(t *testing.T) {
	exceptions := map[string]string{
		"rm --yes-delete-everything": "deleting every key is asked for on the command line, never inherited from an environment",
		"rm --all":                   "an inherited variable must not widen what rm removes",
		"rm --prefix":                "an inherited variable must not turn rm KEY into a bulk delete",
	}
	for k := range noEnv {
		if _, ok := exceptions[k]; !ok {
			t.Errorf("noEnv exempts %s, which this test does not list with a reason", k)
		}
	}
	seen := map[string]string{} // env name -> the verb and flag that has it
	for path, fs := range verbFlags(t) {
		fs.VisitAll(func(f *flag.Flag) {
			id := path + " --" + f.Name
			m := cliflag.EnvInUsage.FindStringSubmatch(f.Usage)
			if _, ok := exceptions[id]; ok {
				if m != nil {
					t.Errorf("%s is an exception but names %s", id, m[1])
				}
				return
			}
			if m == nil {
				t.Errorf("%s: its usage names no environment variable: %q", id, f.Usage)
				return
			}
			if strings.Count(f.Usage, "env "+m[1]) != 1 {
				t.Errorf("%s names %s more than once: %q", id, m[1], f.Usage)
			}
			if other, ok := seen[m[1]]; ok && !strings.HasSuffix(other, " --"+f.Name) {
				t.Errorf("%s and %s share %s but are different flags", id, other, m[1])
			}
			seen[m[1]] = id
		})
	}
}

// envRead finds the variables the sources read for flag defaults.
var envRead = regexp.MustCompile(`env(?:String|Bool|Duration|Int)\("([A-Z0-9_]+)"`)

// TestFlagDefaultsReadNamedVariables: a variable read for a flag's
// default (envString and the like) is the one its usage names, so --help
// tells the truth (bindEnv reads the named one too).
func TestFlagDefaultsReadNamedVariables(t *testing.T) {
	named := map[string]bool{}
	for _, fs := range verbFlags(t) {
		fs.VisitAll(func(f *flag.Flag) {
			if m := cliflag.EnvInUsage.FindStringSubmatch(f.Usage); m != nil {
				named[m[1]] = true
			}
		})
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "flags.go" {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range envRead.FindAllStringSubmatch(string(b), -1) {
			if !named[m[1]] {
				t.Errorf("%s reads %s for a default, but no flag's usage names it", name, m[1])
			}
		}
	}
}

// envValue is a value for f's variable that differs from its default
// and that f accepts.
func envValue(path string, f *flag.Flag) string {
	// Values checked against each other before the flags are parsed.
	if v, ok := map[string]string{"holder --gc-high-watermark": "0.95"}[path+" --"+f.Name]; ok {
		return v
	}
	switch f.DefValue {
	case "false":
		return "true"
	case "true":
		return "false"
	}
	for _, v := range []string{"0.5", "17", "17s", "17MiB", "wal", "boltdb", "greedy", "age-aware", "env-value"} {
		if v == f.DefValue {
			continue
		}
		old := f.Value.String()
		if f.Value.Set(v) == nil {
			_ = f.Value.Set(old)
			return v
		}
	}
	return ""
}

// TestEveryFlagReadsItsEnvironmentVariable sets each flag's variable,
// parses the verb's command line without arguments and checks the flag
// took the value (and that a flag on the command line still wins).
func TestEveryFlagReadsItsEnvironmentVariable(t *testing.T) {
	for path, fs := range verbFlags(t) {
		fs.VisitAll(func(f *flag.Flag) {
			m := cliflag.EnvInUsage.FindStringSubmatch(f.Usage)
			if m == nil {
				return // TestEveryFlagHasAnEnvironmentVariable
			}
			want := envValue(path, f)
			if want == "" {
				t.Errorf("%s --%s: no test value differs from its default %q", path, f.Name, f.DefValue)
				return
			}
			t.Setenv(m[1], want)
			defer os.Unsetenv(m[1])
			if _, err := captureHelp(t, append(strings.Fields(path), "--help")...); err != nil {
				t.Errorf("%s with %s=%s: %v", path, m[1], want, err)
				return
			}
			got := flagSets[path].Lookup(f.Name).Value.String()
			// A variable read in its own unit: seconds for a duration.
			if shown, ok := map[string]string{"holder --gc-interval": "500ms"}[path+" --"+f.Name]; ok && got == shown {
				got = want
			}
			if got != want {
				t.Errorf("%s --%s: %s=%s gives %q", path, f.Name, m[1], want, got)
			}
			if !cliflag.EnvInUsage.MatchString(f.Usage) {
				return
			}
			// The flag wins over the variable.
			if want != "true" && want != "false" {
				args := append(strings.Fields(path), "--"+f.Name+"="+f.DefValue, "--help")
				if f.DefValue == "" {
					return
				}
				if _, err := captureHelp(t, args...); err == nil {
					if got := flagSets[path].Lookup(f.Name).Value.String(); got == want {
						t.Errorf("%s --%s=%s on the command line lost to %s=%s", path, f.Name, f.DefValue, m[1], want)
					}
				}
			}
		})
	}
}

// TestNamedVariablesKeepTheirOwnParsing: a variable a flag's definition
// reads itself is not parsed again as the flag's type, so the holder's
// Mooncake spelling of true is still accepted.
func TestNamedVariablesKeepTheirOwnParsing(t *testing.T) {
	t.Setenv("MOONCAKE_OFFLOAD_BUCKET_GC_ENABLE", "yes")
	if _, err := captureHelp(t, "holder", "--help"); err != nil {
		t.Fatalf("holder with MOONCAKE_OFFLOAD_BUCKET_GC_ENABLE=yes: %v", err)
	}
	if got := flagSets["holder"].Lookup("gc").Value.String(); got != "true" {
		t.Fatalf("holder --gc = %s, want true from yes", got)
	}
}
