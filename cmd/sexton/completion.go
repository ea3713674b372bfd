package main

import (
	"flag"
	"io"
	"os"

	"sexton/internal/completion"
)

// Shell completion is generated from the verb table (internal/completion
// writes the scripts), so a verb or flag added there completes without
// more work: the words that may follow each prefix of a verb's path, and
// each verb's flags.

func runCompletion(_ *env, args []string) error {
	switch args[0] {
	case "bash":
		_, err := io.WriteString(os.Stdout, completion.Bash(completionTable()))
		return err
	case "zsh":
		_, err := io.WriteString(os.Stdout, completion.Zsh(completionTable()))
		return err
	}
	return usagef("completion %q: want bash or zsh", args[0])
}

// completionArgs are the words a verb's positional arguments complete
// to; a verb not listed completes file names.
var completionArgs = map[string][]string{
	"completion": {"bash", "zsh"},
}

// verbFlagNames are the flags of verb v, as its --help registers them.
func verbFlagNames(v *verb) (names []string, takesValue map[string]bool) {
	var fs *flag.FlagSet
	if v.raw != nil {
		// A raw verb registers its flags when run; --help stops it at its
		// parse, before it does anything.
		out := helpOut
		helpOut = io.Discard
		_ = v.raw([]string{"--help"})
		helpOut = out
		fs = flagSets[v.path]
	} else {
		fs, _, _ = v.flags()
	}
	takesValue = map[string]bool{}
	if fs == nil {
		return []string{"--help"}, takesValue
	}
	fs.VisitAll(func(f *flag.Flag) {
		names = append(names, "--"+f.Name)
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
			takesValue["--"+f.Name] = true
		}
	})
	return append(names, "--help"), takesValue
}

// completionTable is the verb table as internal/completion takes it.
func completionTable() completion.Table {
	cmds := make([]completion.Command, 0, len(verbs))
	for i := range verbs {
		names, tv := verbFlagNames(&verbs[i])
		cmds = append(cmds, completion.Command{Path: verbs[i].path, Flags: names, TakesValue: tv})
	}
	return completion.New(cmds, completionArgs)
}
