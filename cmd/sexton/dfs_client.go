package main

import (
	"context"
	"fmt"
	"os"
	"sync"

	"sexton/api"
	"sexton/dfsio"
	"sexton/transport"
)

// dfsClient is a client's DFS data path: its own MOONCAKE_DFS_* settings,
// checked once against the master's before the first DFS read or write.
type dfsClient struct {
	once sync.Once
	fs   *dfsio.Posix
	err  error
}

// open compares this process's settings with the master's and opens the
// adapter; every later call returns the same outcome.
func (c *dfsClient) open(ctx context.Context, cl *transport.ClusterClient) (*dfsio.Posix, error) {
	c.once.Do(func() {
		mine, err := dfsio.SettingsFromEnv(os.Getenv)
		if err != nil {
			c.err = err
			return
		}
		var theirs api.DFSConfigResponse
		if err := cl.Call(ctx, api.MethodDFSConfig, &api.Empty{}, &theirs); err != nil {
			c.err = fmt.Errorf("DFSConfig: %w", err)
			return
		}
		if err := mine.Compare(theirs); err != nil {
			c.err = err
			return
		}
		c.fs, c.err = dfsio.Open(mine)
	})
	return c.fs, c.err
}

// write writes value at r's range, then appends its put record to the
// root's journal, each synced under MOONCAKE_DFS_FSYNC=1, so the record
// is never durable before the bytes it describes.
func (c *dfsClient) write(ctx context.Context, cl *transport.ClusterClient, key, tenant string, inc api.ObjectIncarnation, r api.ReplicaLocation, value []byte) error {
	fs, err := c.open(ctx, cl)
	if err != nil {
		return err
	}
	if r.DFS == nil {
		return api.Errorf(api.CodeCorrupt, "DFS replica without a descriptor")
	}
	if err := fs.WriteAt(*r.DFS, value); err != nil {
		return err
	}
	return fs.AppendPutRecord(key, tenant, inc, *r.DFS, value)
}

func (c *dfsClient) read(ctx context.Context, cl *transport.ClusterClient, r api.ReplicaLocation) ([]byte, error) {
	fs, err := c.open(ctx, cl)
	if err != nil {
		return nil, err
	}
	if r.DFS == nil {
		return nil, api.Errorf(api.CodeCorrupt, "DFS replica without a descriptor")
	}
	return fs.ReadAt(*r.DFS)
}

// clientDFS is this process's DFS data path.
var clientDFS dfsClient
