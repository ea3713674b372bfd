package bench

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"time"

	"sexton/client"
	"sexton/internal/progress"
)

// Env is what a bench runs with: the cluster the command line names, the
// clients onto it, and where its report goes. The command line owns the
// clients (it opens them on first use and closes them after the bench).
type Env struct {
	// Masters are the master RPC addresses; bench holders sizes its open
	// files by them.
	Masters []string
	// TLS loads the cluster's client TLS configuration (nil: no TLS);
	// /metrics and /v1/status are read over HTTPS with it. A nil TLS
	// func is no TLS too.
	TLS func() (*tls.Config, error)
	// Timeout is how long the client retries a call; one call is given
	// a second more to report it.
	Timeout time.Duration
	// Client is the session-carrying client, the same on every call;
	// NewClient opens another with its own connections.
	Client    func() (*client.Client, error)
	NewClient func() (*client.Client, error)
	// Out takes the report, Err what goes wrong on the side (a first
	// error, an unmount that failed).
	Out, Err io.Writer
	// Progress starts reporting a long phase (what, its total, the unit
	// counted); nil reports nothing.
	Progress func(what string, total int64, unit string) Progress
}

// Progress is a long phase's progress report.
type Progress = progress.Reporter

// clientAndProbe is the bench's client and the probe of the masters'
// /metrics at masterHTTP.
func (e *Env) clientAndProbe(masterHTTP []string) (*client.Client, *masterProbe, error) {
	cl, err := e.Client()
	if err != nil {
		return nil, nil, err
	}
	probe, err := e.masterProbe(masterHTTP)
	return cl, probe, err
}

// twoClients is the bench's client and a second one with connections of
// its own.
func (e *Env) twoClients() (*client.Client, *client.Client, error) {
	sc, err := e.Client()
	if err != nil {
		return nil, nil, err
	}
	cl, err := e.NewClient()
	return sc, cl, err
}

func (e *Env) progress(what string, total int64, unit string) Progress {
	if e.Progress == nil {
		return progress.Nothing{}
	}
	return e.Progress(what, total, unit)
}

// UsageError is a bench's options refused before anything was done: the
// command line reports it as a usage error.
type UsageError struct{ Msg string }

func (u UsageError) Error() string { return u.Msg }

func usagef(format string, args ...any) error {
	return UsageError{Msg: fmt.Sprintf(format, args...)}
}

// ctx bounds one call: the Timeout the client retries for, and a second
// to report it.
func (e *Env) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), e.Timeout+time.Second)
}

// callVia calls a master method through cl within ctx().
func (e *Env) callVia(cl *client.Client, method string, req, resp any) error {
	ctx, cancel := e.ctx()
	defer cancel()
	return cl.Call(ctx, method, req, resp)
}

// masterProbe reads the nodes at addrs over HTTP, or HTTPS with the
// cluster's TLS settings when they are given.
func (e *Env) masterProbe(addrs []string) (*masterProbe, error) {
	var conf *tls.Config
	if e.TLS != nil {
		c, err := e.TLS()
		if err != nil {
			return nil, err
		}
		conf = c
	}
	p := &masterProbe{addrs: addrs, scheme: "http", hc: &http.Client{Timeout: 5 * time.Second}, out: e.Out}
	if conf != nil {
		p.scheme = "https"
		p.hc.Transport = &http.Transport{TLSClientConfig: conf}
	}
	return p, nil
}
