package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"time"

	"sexton/client"
	"sexton/internal/cliflag"
	"sexton/internal/progress"
	"sexton/jsonout"
	"sexton/transport"
)

// progressTo is where long operator work reports its progress: stderr,
// never stdout, so --json output stays one JSON value (tests replace it).
var progressTo = progress.Stderr()

// env is what a verb runs with: the shared flags, parsed once by the
// dispatcher, and the client they describe, opened on first use and
// closed after the verb returns.
type env struct {
	masters string
	token   string
	tls     tlsFlags
	timeout time.Duration
	json    bool

	tlsConf   *tls.Config // from tls, built once
	tlsLoaded bool

	cl     *client.Client
	opened []*client.Client
}

// register adds the cluster flags to fs.
func (e *env) register(fs *flag.FlagSet) {
	fs.StringVar(&e.masters, "masters", cliflag.EnvString("SEXTON_MASTERS", "127.0.0.1:7101"), "master RPC addresses A,B,C (env SEXTON_MASTERS)")
	fs.StringVar(&e.token, "cluster-token", cliflag.EnvString("SEXTON_CLUSTER_TOKEN", ""), "the token this caller proves: a client or operator token, or the cluster token (env SEXTON_CLUSTER_TOKEN)")
	fs.DurationVar(&e.timeout, "timeout", cliflag.EnvDuration("SEXTON_TIMEOUT", 15*time.Second), "give up after this long (env SEXTON_TIMEOUT)")
	e.tls.register(fs)
}

// clientConfig is the transport config every connection to a master or
// a holder uses: the token and the TLS flags.
func (e *env) clientConfig() (transport.ClientConfig, error) {
	if !e.tlsLoaded {
		c, err := e.tls.clientConfig()
		if err != nil {
			return transport.ClientConfig{}, err
		}
		e.tlsConf, e.tlsLoaded = c, true
	}
	return transport.ClientConfig{Token: e.token, TLS: e.tlsConf}, nil
}

// client is the session-carrying client over the cluster flags, one per
// verb run.
func (e *env) client() (*client.Client, error) {
	if e.cl == nil {
		cl, err := e.newClient()
		if err != nil {
			return nil, err
		}
		e.cl = cl
	}
	return e.cl, nil
}

// newClient opens another client with its own connections (a bench's
// background traffic), closed with the rest.
func (e *env) newClient() (*client.Client, error) {
	cc, err := e.clientConfig()
	if err != nil {
		return nil, err
	}
	cl, err := client.New(client.Config{Masters: cliflag.SplitList(e.masters), Token: cc.Token, TLS: cc.TLS, Timeout: e.timeout})
	if err != nil {
		return nil, fmt.Errorf("%w (--masters or SEXTON_MASTERS)", err)
	}
	clientDFS.Use(cl)
	e.opened = append(e.opened, cl)
	return cl, nil
}

func (e *env) close() {
	for _, cl := range e.opened {
		cl.Close()
	}
	e.opened, e.cl = nil, nil
}

// ctx bounds one call: the --timeout the client retries for, and a second
// to report it.
func (e *env) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), e.timeout+time.Second)
}

// call calls a master method (leader-following, no session) within ctx().
func (e *env) call(method string, req, resp any) error {
	cl, err := e.client()
	if err != nil {
		return err
	}
	return e.callVia(cl, method, req, resp)
}

// callVia is call through a given client.
func (e *env) callVia(cl *client.Client, method string, req, resp any) error {
	ctx, cancel := e.ctx()
	defer cancel()
	return cl.Call(ctx, method, req, resp)
}

// output prints v as indented JSON under --json, or runs text.
func (e *env) output(v any, text func() error) error {
	if e.json {
		return printJSON(v)
	}
	return text()
}

// clientDFS is this process's DFS data path, shared by its clients.
var clientDFS client.EnvDFS

// printJSON prints v as indented JSON, once it has checked the encoding
// keeps the contract (jsonout.Encode).
func printJSON(v any) error {
	b, err := jsonout.Encode(v)
	if err != nil {
		return err
	}
	jsonPrinted = true
	_, err = os.Stdout.Write(append(b, '\n'))
	return err
}

// jsonPrinted is set once printJSON wrote a value in this run of a verb
// (exec clears it), so a failing --json verb that printed nothing yet
// prints its error as the one JSON value instead (errorJSON).
var jsonPrinted bool
