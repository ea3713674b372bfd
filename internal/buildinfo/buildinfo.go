// Package buildinfo says which build of sexton is running: its version,
// the commit it was built from, the Go version and the build time. The
// version, status answer, metrics and first log line all read it here,
// so they agree.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Version, Commit and Date override what the binary's embedded build
// information says; release builds set them with -ldflags -X (the
// Makefile's build target does), since a build from a source archive has
// no VCS stamp and `go build` reports the main module as (devel).
var (
	Version string
	Commit  string
	Date    string
)

// Info is one build's identity.
type Info struct {
	Version   string // a module version or release tag; "(devel)" when unknown
	Commit    string // VCS revision; "unknown" when the build has none
	Modified  bool   // the work tree had uncommitted changes
	GoVersion string
	Date      string // the commit's time (vcs.time), or the -X override; may be empty
}

// Get reads the running binary's build information, the -X overrides
// first.
func Get() Info {
	info := Info{Version: "(devel)", Commit: "unknown", GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" {
			info.Version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Commit = s.Value
			case "vcs.time":
				info.Date = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if Version != "" {
		info.Version = Version
	}
	if Commit != "" {
		info.Commit = Commit
	}
	if Date != "" {
		info.Date = Date
	}
	return info
}

// ShortCommit is the commit cut to 12 hex digits, with "+dirty" for a
// modified work tree.
func (i Info) ShortCommit() string {
	c := i.Commit
	if len(c) > 12 && !strings.ContainsAny(c, " ") {
		c = c[:12]
	}
	if i.Modified {
		c += "+dirty"
	}
	return c
}

// String is the one-line form: "sexton v1.2.0 (commit 0123456789ab, go1.26.0, built 2026-01-02T03:04:05Z)".
func (i Info) String() string {
	s := fmt.Sprintf("sexton %s (commit %s, %s", i.Version, i.ShortCommit(), i.GoVersion)
	if i.Date != "" {
		s += ", built " + i.Date
	}
	return s + ")"
}

// Gauge is sexton_build_info{version,commit,go_version} = 1, for a
// server's registry: dashboards join on it to show what each node runs.
func Gauge() prometheus.Collector {
	i := Get()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "sexton_build_info",
		Help:        "Always 1; the labels name this process's build (sexton version).",
		ConstLabels: prometheus.Labels{"version": i.Version, "commit": i.ShortCommit(), "go_version": i.GoVersion},
	})
	g.Set(1)
	return g
}
