package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"sexton/api"
)

// runOperatorSettings shows or changes the replicated settings: the knobs
// that change what Apply does live in the log, not in any node's flags.
func runOperatorSettings(args []string) error {
	sub := "show"
	if len(args) > 0 && (args[0] == "set" || args[0] == "show") {
		sub, args = args[0], args[1:]
	}
	var cf clientFlags
	fs := newFlags("operator settings " + sub)
	cf.register(fs, true)
	var capacity, maxSessions, maxResults int
	var ttl time.Duration
	if sub == "set" {
		fs.IntVar(&capacity, "registry-capacity", 0, "local delete registry capacity (tasks + reservations); not below the tasks pending now")
		fs.DurationVar(&ttl, "session-ttl", 0, "forget a client session idle this long (leader time)")
		fs.IntVar(&maxSessions, "max-sessions", 0, "client sessions kept at most")
		fs.IntVar(&maxResults, "max-session-results", 0, "unacknowledged results kept per client")
	}
	if err := parseFlags(fs, args); err != nil {
		return usagef("%v", err)
	}
	if fs.NArg() != 0 {
		return usagef("operator settings [show] | operator settings set [--registry-capacity N] [--session-ttl D] [--max-sessions N] [--max-session-results N]")
	}
	cl, err := cf.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	var resp api.SettingsResponse
	if sub == "set" {
		want := api.Settings{RegistryCapacity: capacity, SessionTTLMillis: ttl.Milliseconds(), MaxSessions: maxSessions, MaxSessionResults: maxResults}
		if want == (api.Settings{}) {
			return usagef("operator settings set: name at least one setting")
		}
		if resp, err = cl.SetSettings(context.Background(), want); err != nil {
			return fmt.Errorf("settings set: %w", err)
		}
	} else if resp, err = cl.Settings(context.Background()); err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	if cf.json {
		return printJSON(resp)
	}
	s := resp.Settings
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "registry_capacity\t%d\n", s.RegistryCapacity)
	fmt.Fprintf(tw, "session_ttl\t%s\n", time.Duration(s.SessionTTLMillis)*time.Millisecond)
	fmt.Fprintf(tw, "max_sessions\t%d\n", s.MaxSessions)
	fmt.Fprintf(tw, "max_session_results\t%d\n", s.MaxSessionResults)
	fmt.Fprintf(tw, "as of index\t%d\n", resp.Index)
	return tw.Flush()
}
