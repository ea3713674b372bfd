package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"sexton/api"
)

// The replicated settings: the knobs that change what Apply does live in
// the log, not in any node's flags.

func setupSettingsShow(*flag.FlagSet) runFunc {
	return func(e *env, args []string) error {
		if len(args) == 1 && args[0] != "show" {
			return usagef("operator settings: unknown command %q (show or set)", args[0])
		}
		cl, err := e.client()
		if err != nil {
			return err
		}
		resp, err := cl.Settings(context.Background())
		if err != nil {
			return fmt.Errorf("settings: %w", err)
		}
		return printSettings(e, resp)
	}
}

func setupSettingsSet(fs *flag.FlagSet) runFunc {
	capacity := fs.Int("registry-capacity", 0, "local delete registry capacity (tasks + reservations); not below the tasks pending now")
	ttl := fs.Duration("session-ttl", 0, "forget a client session idle this long (leader time)")
	maxSessions := fs.Int("max-sessions", 0, "client sessions kept at most")
	maxResults := fs.Int("max-session-results", 0, "unacknowledged results kept per client")
	return func(e *env, _ []string) error {
		want := api.Settings{RegistryCapacity: *capacity, SessionTTLMillis: ttl.Milliseconds(), MaxSessions: *maxSessions, MaxSessionResults: *maxResults}
		if want == (api.Settings{}) {
			return usagef("operator settings set: name at least one setting")
		}
		cl, err := e.client()
		if err != nil {
			return err
		}
		resp, err := cl.SetSettings(context.Background(), want)
		if err != nil {
			return fmt.Errorf("settings set: %w", err)
		}
		return printSettings(e, resp)
	}
}

func printSettings(e *env, resp api.SettingsResponse) error {
	return e.output(resp, func() error {
		s := resp.Settings
		tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "registry_capacity\t%d\n", s.RegistryCapacity)
		fmt.Fprintf(tw, "session_ttl\t%s\n", time.Duration(s.SessionTTLMillis)*time.Millisecond)
		fmt.Fprintf(tw, "max_sessions\t%d\n", s.MaxSessions)
		fmt.Fprintf(tw, "max_session_results\t%d\n", s.MaxSessionResults)
		fmt.Fprintf(tw, "as of index\t%d\n", resp.Index)
		return tw.Flush()
	})
}
