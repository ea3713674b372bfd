package main

import (
	"flag"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"sexton/internal/buildinfo"
)

// versionOut is sexton version --json.
type versionOut struct {
	Kind      string `json:"kind"` // always "version"
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Modified  bool   `json:"modified"`
	GoVersion string `json:"go_version"`
	Date      string `json:"date,omitempty"`
}

// kindVersion is versionOut's kind.
const kindVersion = "version"

func setupVersion(*flag.FlagSet) runFunc {
	return func(e *env, _ []string) error {
		i := buildinfo.Get()
		return e.output(versionOut{Kind: kindVersion, Version: i.Version, Commit: i.Commit, Modified: i.Modified, GoVersion: i.GoVersion, Date: i.Date}, func() error {
			fmt.Println(i.String())
			return nil
		})
	}
}

// logBuild is a server's first log line: which build is running, so a
// log read later says what produced it.
func logBuild(l hclog.Logger, what string) {
	i := buildinfo.Get()
	l.Info("sexton "+what+" starting", "version", i.Version, "commit", i.ShortCommit(), "go", i.GoVersion, "built", i.Date)
}
