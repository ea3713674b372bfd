package cliflag

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"4096": 4096, "4KiB": 4096, "256MiB": 256 << 20, " 4GiB ": 4 << 30, "1.5GB": 1500000000, "2K": 2048, "7B": 7, "0": 0} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v, want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "-1KiB", "NaNGiB", "InfB", "1e30TB", "4 parsecs"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
}

// Flags may stand anywhere among the arguments; "--" ends them. Bind
// names the derived variable in a flag's usage and sets the flag from it
// without marking it given; a variable the usage names is left to its
// flag's definition; a value the flag refuses is an error naming both.
func TestInterspersedAndBind(t *testing.T) {
	newFS := func() (*flag.FlagSet, *int, *string) {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		return fs, fs.Int("n", 1, "count"), fs.String("s", "", EnvUsage("SEXTON_OWN", "named"))
	}
	fs, n, _ := newFS()
	pos, err := Interspersed(fs, []string{"a", "-n", "3", "b", "--", "-n", "c"})
	if err != nil || *n != 3 || !slices.Equal(pos, []string{"a", "b", "-n", "c"}) {
		t.Fatalf("Interspersed: %v %d %v", pos, *n, err)
	}

	derive := func(f *flag.Flag) string { return "SEXTON_X_" + strings.ToUpper(f.Name) }
	t.Setenv("SEXTON_X_N", "5")
	t.Setenv("SEXTON_X_S", "not read")
	fs, n, s := newFS()
	if err := Bind(fs, derive, true); err != nil || *n != 5 || *s != "" {
		t.Fatalf("Bind: n %d s %q %v", *n, *s, err)
	}
	if u := fs.Lookup("n").Usage; u != "count (env SEXTON_X_N)" {
		t.Errorf("usage %q", u)
	}
	given := false
	fs.Visit(func(*flag.Flag) { given = true })
	if given {
		t.Error("a flag set from the environment counts as given")
	}
	t.Setenv("SEXTON_X_N", "many")
	fs, _, _ = newFS()
	if err := Bind(fs, derive, true); err == nil || !strings.Contains(err.Error(), `SEXTON_X_N="many" (for --n)`) {
		t.Errorf("a bad value: %v", err)
	}
}

func TestEnvReaders(t *testing.T) {
	t.Setenv("SEXTON_T_D", "3s")
	t.Setenv("SEXTON_T_I", "x")
	t.Setenv("SEXTON_T_B", "true")
	if EnvDuration("SEXTON_T_D", time.Second) != 3*time.Second || EnvInt("SEXTON_T_I", 7) != 7 || !EnvBool("SEXTON_T_B", false) ||
		EnvString("SEXTON_T_UNSET", "d") != "d" || EnvInt("SEXTON_T_UNSET", 2) != 2 {
		t.Error("an environment reader")
	}
	for in, want := range map[string]time.Duration{"2.5": 2500 * time.Millisecond, " 10s": 10 * time.Second, "0": 0} {
		if got, err := ParseSeconds(in); err != nil || got != want {
			t.Errorf("ParseSeconds(%q) = %v, %v, want %v", in, got, err, want)
		}
	}
	if _, err := ParseSeconds("soon"); err == nil {
		t.Error("ParseSeconds(soon) accepted")
	}
	if got := SplitList(" a, ,b ,"); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("SplitList = %q", got)
	}
}
