package main

import (
	"fmt"
	"os"

	"github.com/hashicorp/go-hclog"

	"sexton/devcluster"
	"sexton/dfsio"
)

// runDev starts a one-node master and one holder in a temporary directory and stays up until interrupted.
func runDev(args []string) error {
	fs := newFlags("dev")
	rpc := fs.String("rpc-addr", "127.0.0.1:7101", "master RPC address")
	raftAddr := fs.String("raft-addr", "127.0.0.1:7001", "master Raft address")
	httpAddr := fs.String("http-addr", "127.0.0.1:7201", "master HTTP address")
	holderAddr := fs.String("holder-addr", "127.0.0.1:7301", "holder data RPC address")
	holderHTTP := fs.String("holder-http-addr", "", "holder HTTP address (/metrics); empty: a free loopback port")
	keep := fs.Bool("keep", false, "keep the temporary directory on exit")
	if err := parseFlags(fs, args); err != nil {
		return usagef("%v", err)
	}
	dir, err := os.MkdirTemp("", "sexton-dev-")
	if err != nil {
		return err
	}
	if !*keep {
		defer os.RemoveAll(dir)
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "dev", Level: hclog.Info, Output: os.Stderr})
	logBuild(logger, "dev")
	dfs, err := dfsio.SettingsFromEnv(os.Getenv)
	if err != nil {
		return fmt.Errorf("DFS settings: %w", err)
	}
	c, err := devcluster.Start(devcluster.Config{Dir: dir, RPCAddr: *rpc, RaftAddr: *raftAddr, HTTPAddr: *httpAddr,
		HolderAddr: *holderAddr, HolderHTTPAddr: *holderHTTP, Logger: logger, DFS: dfs})
	if err != nil {
		return err
	}
	defer c.Close()
	n := c.Master
	fmt.Printf("sexton dev: master at %s (http %s), holder at %s (http %s), data in %s\n", n.RPCAddr(), n.HTTPAddr(), c.Holder.Addr(), c.Holder.HTTPAddr(), dir)
	fmt.Printf("try: sexton put hello - <<< world; sexton get hello; sexton rm hello\n")
	waitForSignal()
	return nil
}
