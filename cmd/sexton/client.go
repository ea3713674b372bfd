package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"sexton/api"
	"sexton/client"
	"sexton/transport"
)

// clientFlags are shared by every client verb.
type clientFlags struct {
	masters string
	token   string
	timeout time.Duration
	json    bool
}

func (c *clientFlags) register(fs *flag.FlagSet, withJSON bool) {
	fs.StringVar(&c.masters, "masters", envString("SEXTON_MASTERS", "127.0.0.1:7101"), "master RPC addresses A,B,C (env SEXTON_MASTERS)")
	fs.StringVar(&c.token, "cluster-token", envString("SEXTON_CLUSTER_TOKEN", ""), "cluster token (env SEXTON_CLUSTER_TOKEN)")
	fs.DurationVar(&c.timeout, "timeout", envDuration("SEXTON_TIMEOUT", 15*time.Second), "give up after this long (env SEXTON_TIMEOUT)")
	if withJSON {
		fs.BoolVar(&c.json, "json", false, "print JSON")
	}
}

func (c *clientFlags) cluster() (*transport.ClusterClient, error) {
	addrs := splitList(c.masters)
	if len(addrs) == 0 {
		return nil, fmt.Errorf("no master addresses (--masters or SEXTON_MASTERS)")
	}
	return transport.NewClusterClient(addrs, transport.ClusterConfig{
		ClientConfig: transport.ClientConfig{Token: c.token},
		MaxWait:      c.timeout,
	}), nil
}

// client returns the session-carrying client library over the same flags.
func (c *clientFlags) client() (*client.Client, error) {
	cl, err := client.New(client.Config{Masters: splitList(c.masters), Token: c.token, Timeout: c.timeout})
	if err != nil {
		return nil, fmt.Errorf("%w (--masters or SEXTON_MASTERS)", err)
	}
	cl.SetDFS(dfsDataPath{cl: cl})
	return cl, nil
}

// dfsDataPath is this process's DFS data path for the client library.
type dfsDataPath struct{ cl *client.Client }

func (d dfsDataPath) Write(ctx context.Context, r api.ReplicaLocation, value []byte) error {
	return clientDFS.write(ctx, d.cl.Masters(), r, value)
}

func (d dfsDataPath) Read(ctx context.Context, r api.ReplicaLocation) ([]byte, error) {
	return clientDFS.read(ctx, d.cl.Masters(), r)
}

func (c *clientFlags) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), c.timeout+time.Second)
}

// dataClientConfig is for holder data calls, whose frames carry values up
// to the bucket size limit.
func (c *clientFlags) dataClientConfig() transport.ClientConfig {
	return transport.ClientConfig{Token: c.token, MaxFrame: dataMaxFrame}
}

// dataMaxFrame bounds a holder data frame: one value of at most the bucket
// size limit (256 MiB) plus its envelope.
const dataMaxFrame = 256<<20 + 1<<20

func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func call(cl *transport.ClusterClient, cf *clientFlags, method string, req, resp any) error {
	ctx, cancel := cf.ctx()
	defer cancel()
	return cl.Call(ctx, method, req, resp)
}
