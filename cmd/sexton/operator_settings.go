package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"sexton/api"
	"sexton/internal/cliflag"
)

// The replicated settings: the knobs that change what Apply does live in
// the log, not in any node's flags.

func runSettingsShow(e *env, args []string) error {
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

func setupSettingsSet(fs *flag.FlagSet) runFunc {
	read := settingFlags(fs, func(sp api.SettingSpec) string { return sp.Help }, false)
	return func(e *env, _ []string) error {
		want := read()
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

// settingFlags defines one flag per row of api.SettingsTable on fs, named
// by its Flag, a duration for a setting in milliseconds; with env each
// reads SEXTON_<FLAG> for its default (the master's flags). read returns
// the values given as a Settings change (zero: not given).
func settingFlags(fs *flag.FlagSet, usage func(api.SettingSpec) string, env bool) (read func() api.Settings) {
	type field struct {
		sp  api.SettingSpec
		n   *int64
		dur *time.Duration
	}
	var fields []field
	for _, sp := range api.SettingsTable {
		f, u, name := field{sp: sp}, usage(sp), ""
		if env {
			name = "SEXTON_" + strings.ToUpper(strings.ReplaceAll(sp.Flag, "-", "_"))
			u = cliflag.EnvUsage(name, u)
		}
		if sp.Unit == api.UnitMillis {
			def := time.Duration(0)
			if env {
				def = cliflag.EnvDuration(name, 0)
			}
			f.dur = fs.Duration(sp.Flag, def, u)
		} else {
			def := 0
			if env {
				def = cliflag.EnvInt(name, 0)
			}
			f.n = fs.Int64(sp.Flag, int64(def), u)
		}
		fields = append(fields, f)
	}
	return func() api.Settings {
		var s api.Settings
		for _, f := range fields {
			if f.dur != nil {
				f.sp.Set(&s, f.dur.Milliseconds())
			} else {
				f.sp.Set(&s, *f.n)
			}
		}
		return s
	}
}

func printSettings(e *env, resp api.SettingsResponse) error {
	return e.output(resp, func() error {
		s := resp.Settings
		tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
		for _, sp := range api.SettingsTable {
			fmt.Fprintf(tw, "%s\t%s\n", sp.Name(), sp.Format(sp.Get(&s)))
		}
		fmt.Fprintf(tw, "as of index\t%d\n", resp.Index)
		return tw.Flush()
	})
}
