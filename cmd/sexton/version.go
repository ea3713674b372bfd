package main

import (
	"fmt"

	"github.com/hashicorp/go-hclog"

	"sexton/internal/buildinfo"
	"sexton/jsonout"
)

func runVersion(e *env, _ []string) error {
	i := buildinfo.Get()
	return e.output(jsonout.Version{Kind: jsonout.KindVersion, Version: i.Version, Commit: i.Commit, Modified: i.Modified, GoVersion: i.GoVersion, Date: i.Date}, func() error {
		fmt.Println(i.String())
		return nil
	})
}

// logBuild is a server's first log line: which build is running, so a
// log read later says what produced it.
func logBuild(l hclog.Logger, what string) {
	i := buildinfo.Get()
	l.Info("sexton "+what+" starting", "version", i.Version, "commit", i.ShortCommit(), "go", i.GoVersion, "built", i.Date)
}
