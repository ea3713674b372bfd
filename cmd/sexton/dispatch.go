package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// helpOut receives what --help asks for (tests replace it).
var helpOut io.Writer = os.Stdout

// run finds the verb with the longest path that args start with, parses
// its flags (the shared ones here, once) and runs it. A usage error comes
// back carrying the usage text to show with it.
func run(args []string) error {
	if len(args) == 0 {
		return usageError{msg: "no command given", usage: topUsage()}
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[0] == "help" {
			return run(append(args[1:], "--help"))
		}
		fmt.Fprint(helpOut, topUsage())
		return nil
	case "version", "-version", "--version":
		if args[0] != "version" {
			return run(append([]string{"version"}, args[1:]...))
		}
	}
	v, n := findVerb(args)
	if v == nil {
		return groupOrUnknown(args)
	}
	err := v.exec(args[n:])
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(helpOut, v.help())
		return nil
	case err == nil:
		return nil
	}
	var ue usageError
	if errors.As(err, &ue) && ue.usage == "" {
		ue.usage = v.help()
		return ue
	}
	return err
}

// exec parses the verb's flags and runs it.
func (v *verb) exec(args []string) error {
	if v.raw != nil {
		return v.raw(args)
	}
	fs, e, runIt := v.flags()
	pos, err := parseAll(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < v.nargs.min || (v.nargs.max >= 0 && len(pos) > v.nargs.max) {
		if v.args == "" {
			return usagef("%s takes no arguments", v.path)
		}
		return usagef("%s: want %s", v.path, v.args)
	}
	defer e.close()
	jsonPrinted = false
	err = runIt(e, pos)
	var ue usageError
	if err != nil && e.json && !jsonPrinted && !errors.As(err, &ue) {
		// The contract: a --json verb prints exactly one JSON value, also
		// when it fails; the error is that value then.
		if perr := printJSON(errorJSON(err)); perr != nil {
			return errors.Join(err, perr)
		}
	}
	return err
}

// flags makes a FlagSet with the verb's flags: the shared ones it takes,
// into e, and its own (setup), whose run function comes back (or run,
// for a verb without flags of its own).
func (v *verb) flags() (fs *flag.FlagSet, e *env, run runFunc) {
	fs, e = newFlags(v.path), &env{}
	if v.takes&clusterFlags != 0 {
		e.register(fs)
	}
	if v.takes&jsonFlag != 0 {
		fs.BoolVar(&e.json, "json", false, "print JSON (snake_case keys)")
	}
	if v.run != nil {
		return fs, e, v.run
	}
	return fs, e, v.setup(fs)
}

// findVerb returns the verb whose path is the longest prefix of args and
// how many words of args its path took.
func findVerb(args []string) (*verb, int) {
	var best *verb
	n := 0
	for i := range verbs {
		w := strings.Fields(verbs[i].path)
		if len(w) > n && len(w) <= len(args) && slices.Equal(w, args[:len(w)]) {
			best, n = &verbs[i], len(w)
		}
	}
	return best, n
}

// groupOrUnknown answers args that name no verb: the usage of the longest
// group of verbs they start (sexton operator, sexton operator raft), as
// help or as a usage error.
func groupOrUnknown(args []string) error {
	n := 0
	for _, v := range verbs {
		w := strings.Fields(v.path)
		k := 0
		for k < len(w) && k < len(args) && w[k] == args[k] {
			k++
		}
		n = max(n, k)
	}
	if n == 0 {
		return usageError{msg: fmt.Sprintf("unknown command %q", args[0]), usage: topUsage()}
	}
	prefix := strings.Join(args[:n], " ")
	usage := groupUsage(prefix)
	if len(args) == n {
		return usageError{msg: prefix + ": name a command", usage: usage}
	}
	switch args[n] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(helpOut, usage)
		return nil
	}
	return usageError{msg: fmt.Sprintf("unknown command %q", prefix+" "+args[n]), usage: usage}
}

// newFlags returns a FlagSet that reports errors instead of exiting or
// printing: run prints the error and the verb's usage once. Every flag
// may also be set through an environment variable; the flag wins.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	flagSets[name] = fs
	return fs
}

// flagSets are the FlagSets made in this process by name, so a raw
// verb's --help can list its flags.
var flagSets = map[string]*flag.FlagSet{}

// synopsis is the verb's usage line.
func (v *verb) synopsis() string {
	s := v.path
	if v.args != "" {
		s += " " + v.args
	}
	if v.takes&jsonFlag != 0 {
		s += " [--json]"
	}
	return s
}

// help is what `sexton VERB --help` prints: synopsis, summary, flags.
func (v *verb) help() string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: sexton %s [flags]\n\n%s\n", v.synopsis(), v.summary)
	if v.detail != "" {
		fmt.Fprintf(&b, "\n%s\n", v.detail)
	}
	if fs := flagSets[v.path]; fs != nil && hasFlags(fs) {
		_ = bindEnv(fs, false)
		b.WriteString("\nflags:\n")
		fs.SetOutput(&b)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	b.WriteString("\n" + exitStatuses)
	return b.String()
}

func hasFlags(fs *flag.FlagSet) bool {
	found := false
	fs.VisitAll(func(*flag.Flag) { found = true })
	return found
}

const exitStatuses = `exit status: 0 done; 1 refused or failed (nothing changed, or what changed
is printed); 2 usage; 3 a master halted on a log entry this build cannot
apply (sexton master; upgrade it, do not restart it); 4 outcome unknown
(the request may or may not have run: OUTCOME_UNKNOWN). docs/CLI.md.
`

// topUsage lists every verb by group.
func topUsage() string {
	var b strings.Builder
	b.WriteString("usage: sexton COMMAND [ARGS] [flags]\n")
	for _, g := range groups {
		fmt.Fprintf(&b, "\n%s:\n", g)
		for i := range verbs {
			if verbs[i].group == g {
				b.WriteString(verbs[i].usageLine())
			}
		}
	}
	b.WriteString(`
* takes the cluster flags: --masters A,B,C (env SEXTON_MASTERS, default
  127.0.0.1:7101), --cluster-token T (env SEXTON_CLUSTER_TOKEN), --timeout D
  (env SEXTON_TIMEOUT, default 15s), --tls-cert, --tls-key, --tls-ca FILE
  (env SEXTON_TLS_CERT, SEXTON_TLS_KEY, SEXTON_TLS_CA; --tls-ca alone for a
  client without a certificate).
'sexton COMMAND --help' shows a command's flags; 'sexton operator' (any
first words) lists the commands that start with them.

`)
	b.WriteString(exitStatuses)
	return b.String()
}

// groupUsage lists the verbs whose path starts with prefix.
func groupUsage(prefix string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: sexton %s COMMAND [ARGS] [flags]\n\n", prefix)
	cluster := false
	for i := range verbs {
		if strings.HasPrefix(verbs[i].path+" ", prefix+" ") {
			b.WriteString(verbs[i].usageLine())
			cluster = cluster || verbs[i].takes&clusterFlags != 0
		}
	}
	b.WriteString("\n")
	if cluster {
		b.WriteString("* takes the cluster flags (--masters, --cluster-token, --timeout, --tls-*); see 'sexton --help'.\n")
	}
	b.WriteString("'sexton COMMAND --help' shows a command's flags.\n")
	return b.String()
}

// usageLine is the verb's line in a listing: a mark for the cluster
// flags, the synopsis, the summary.
func (v *verb) usageLine() string {
	mark := " "
	if v.takes&clusterFlags != 0 {
		mark = "*"
	}
	s := v.synopsis()
	if len(s) > 28 {
		return fmt.Sprintf("%s %s\n%32s%s\n", mark, s, "", v.summary)
	}
	return fmt.Sprintf("%s %-30s%s\n", mark, s, v.summary)
}
