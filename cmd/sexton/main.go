// Command sexton is the one binary of sexton: the master, the holder, a
// one-process dev cluster, the client verbs and the operator tools. The
// verbs are listed once, in verbs.go; dispatch.go parses their shared
// flags and makes the usage from that table.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"sexton/api"
	"sexton/jsonout"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(os.Stderr, "sexton: %s\n", ue.msg)
			if ue.usage != "" {
				fmt.Fprintf(os.Stderr, "\n%s", ue.usage)
			}
			os.Exit(exitUsage)
		}
		fmt.Fprintf(os.Stderr, "sexton: %s\n", jsonout.OneLine(err))
		os.Exit(exitCode(err))
	}
}

// Exit statuses: 0 done, 1 refused or failed (nothing changed, or what
// changed is printed), 2 usage, 3 a master halted on a log entry this
// build cannot apply (master.Config.Halt exits with it; the systemd unit
// does not restart on it), 4 the outcome is unknown (the request may or
// may not have run; see OUTCOME_UNKNOWN). The usage and docs/CLI.md say
// so too (exitStatuses).
const (
	exitFailed         = 1
	exitUsage          = 2
	exitMasterHalted   = 3
	exitOutcomeUnknown = 4
)

func exitCode(err error) int {
	var ue usageError
	switch {
	case errors.As(err, &ue):
		return exitUsage
	case api.CodeOf(err) == api.CodeOutcomeUnknown:
		return exitOutcomeUnknown
	}
	return exitFailed
}

// usageError is a command line sexton does not accept; usage, when set,
// is printed after it.
type usageError struct{ msg, usage string }

func (u usageError) Error() string { return u.msg }

// usagef makes a usageError; a help request passed through it (a raw
// verb's parse error) stays flag.ErrHelp.
func usagef(format string, args ...any) error {
	for _, a := range args {
		if err, ok := a.(error); ok && errors.Is(err, flag.ErrHelp) {
			return flag.ErrHelp
		}
	}
	return usageError{msg: fmt.Sprintf(format, args...)}
}

// errorJSON is the failure a --json verb prints as its one value.
func errorJSON(err error) jsonout.Failure {
	return jsonout.Failure{Kind: jsonout.KindError, Code: string(api.CodeOf(err)), Error: jsonout.OneLine(err), ExitStatus: exitCode(err)}
}
