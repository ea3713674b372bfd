// Command sexton is the one binary of sexton: the master, the holder, a
// one-process dev cluster, the client verbs and the operator tools.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"sexton/api"
)

const usage = `usage: sexton <command> [flags]

servers:
  master            run a master node (one-node cluster in ./sexton-data by default)
  holder            run a LOCAL_DISK holder (holder inspect DIR reads one offline)
  dev               one process: a one-node master and one holder in a temp dir

client verbs (--masters A,B,C or SEXTON_MASTERS):
  put KEY [FILE|-]  store a value (--dfs-replicas 1: in a file below MOONCAKE_DFS_ROOT_DIR)
  get KEY [-o FILE] read a value
  rm KEY... | rm --batch FILE|- | rm --if-incarnation INC KEY
                    exit 0 done, 1 refused/failed, 2 usage, 4 outcome unknown
  stat KEY          show an object
  ls [PREFIX]       list objects
  status            show the cluster

operator:
  operator raft list-peers | add-voter ID RAFT_ADDR | remove-peer ID | transfer-leader [ID]
  operator snapshot save FILE | restore FILE | inspect FILE
  operator tasks [--segment ID]
  operator segments
  operator fsck [--json]
  operator retire SEGMENT --by WHO --reason WHY
  operator dfs status [--json] | set-max-buckets N
  operator settings [--json] | settings set [--registry-capacity N] [--session-ttl D] ...

measure:
  bench remove|put|get|raft|dfs [flags]

debug:
  debug crash-points
`

func main() {
	if err := run(os.Args[1:]); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(os.Stderr, "sexton: %v\n\n%s", err, usage)
			os.Exit(2)
		}
		fmt.Fprintf(os.Stderr, "sexton: %s\n", oneLine(err))
		os.Exit(exitCode(err))
	}
}

// Exit statuses of the client verbs: 0 done, 1 refused or failed (nothing
// changed, or what changed is printed), 2 usage, 4 the outcome is unknown
// (the request may or may not have run; see OUTCOME_UNKNOWN).
const exitOutcomeUnknown = 4

func exitCode(err error) int {
	if api.CodeOf(err) == api.CodeOutcomeUnknown {
		return exitOutcomeUnknown
	}
	return 1
}

type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

func run(args []string) error {
	if len(args) == 0 {
		fmt.Print(usage)
		return usagef("no command given")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "master":
		return runMaster(rest)
	case "holder":
		return runHolder(rest)
	case "dev":
		return runDev(rest)
	case "put":
		return runPut(rest)
	case "get":
		return runGet(rest)
	case "rm":
		return runRm(rest)
	case "stat":
		return runStat(rest)
	case "ls":
		return runLs(rest)
	case "status":
		return runStatus(rest)
	case "operator":
		return runOperator(rest)
	case "bench":
		return runBench(rest)
	case "debug":
		return runDebug(rest)
	case "help", "-h", "--help":
		fmt.Print(usage)
		return nil
	}
	return usagef("unknown command %q", cmd)
}

// oneLine renders err as one line: typed errors keep their code.
func oneLine(err error) string {
	var e *api.Error
	s := err.Error()
	if errors.As(err, &e) && e.Leader != "" {
		s += " (leader " + e.Leader + ")"
	}
	return strings.ReplaceAll(s, "\n", "; ")
}
