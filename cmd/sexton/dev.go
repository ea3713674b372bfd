package main

import (
	"fmt"
	"os"

	"github.com/hashicorp/go-hclog"

	"sexton/master"
	"sexton/master/dfsio"
)

// runDev starts a one-node master (and, once holders exist, one holder) in
// a temporary directory and stays up until interrupted.
func runDev(args []string) error {
	fs := newFlags("dev")
	rpc := fs.String("rpc-addr", "127.0.0.1:7101", "master RPC address")
	raftAddr := fs.String("raft-addr", "127.0.0.1:7001", "master Raft address")
	httpAddr := fs.String("http-addr", "127.0.0.1:7201", "master HTTP address")
	holderAddr := fs.String("holder-addr", "127.0.0.1:7301", "holder data RPC address")
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
	dfs, err := dfsio.SettingsFromEnv(os.Getenv)
	if err != nil {
		return fmt.Errorf("DFS settings: %w", err)
	}
	n, err := master.New(master.Config{ID: "dev", DataDir: dir + "/master", RaftAddr: *raftAddr, RPCAddr: *rpc, HTTPAddr: *httpAddr, Bootstrap: true, DFS: dfs, Logger: logger.Named("master")})
	if err != nil {
		return fmt.Errorf("dev master: %w", err)
	}
	defer n.Shutdown()
	stopHolder, err := startDevHolder(dir, n.RPCAddr(), *holderAddr, logger)
	if err != nil {
		return err
	}
	defer stopHolder()
	fmt.Printf("sexton dev: master at %s (http %s), data in %s\n", n.RPCAddr(), n.HTTPAddr(), dir)
	fmt.Printf("try: sexton put hello - <<< world; sexton get hello; sexton rm hello\n")
	waitForSignal()
	return nil
}
