package client

import (
	"context"
	"fmt"
	"os"
	"sync"

	"sexton/api"
	"sexton/dfsio"
)

// EnvDFS is the DFS data path over the posix adapter with this process's
// MOONCAKE_DFS_* settings, checked once against the master's before the
// first DFS read or write. One EnvDFS serves every client of a process
// (Use): the check is made through the first client that needs it, and
// its outcome holds for all.
type EnvDFS struct {
	once sync.Once
	fs   *dfsio.Posix
	err  error
}

// Use makes d the DFS data path of c.
func (d *EnvDFS) Use(c *Client) { c.SetDFS(envDFSOf{d: d, c: c}) }

// open compares this process's settings with the master's and opens the
// adapter; every later call returns the same outcome.
func (d *EnvDFS) open(ctx context.Context, c *Client) (*dfsio.Posix, error) {
	d.once.Do(func() {
		mine, err := dfsio.SettingsFromEnv(os.Getenv)
		if err != nil {
			d.err = err
			return
		}
		var theirs api.DFSConfigResponse
		if err := c.masters.Call(ctx, api.MethodDFSConfig, &api.Empty{}, &theirs); err != nil {
			d.err = fmt.Errorf("DFSConfig: %w", err)
			return
		}
		if err := mine.Compare(theirs); err != nil {
			d.err = err
			return
		}
		d.fs, d.err = dfsio.Open(mine)
	})
	return d.fs, d.err
}

// envDFSOf is d as the DFS of client c.
type envDFSOf struct {
	d *EnvDFS
	c *Client
}

// Write writes value at r's range, then appends its put record to the
// root's journal, each synced under MOONCAKE_DFS_FSYNC=1, so the record
// is never durable before the bytes it describes.
func (e envDFSOf) Write(ctx context.Context, key, tenant string, inc api.ObjectIncarnation, r api.ReplicaLocation, value []byte) error {
	fs, err := e.d.open(ctx, e.c)
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

func (e envDFSOf) Read(ctx context.Context, r api.ReplicaLocation) ([]byte, error) {
	fs, err := e.d.open(ctx, e.c)
	if err != nil {
		return nil, err
	}
	if r.DFS == nil {
		return nil, api.Errorf(api.CodeCorrupt, "DFS replica without a descriptor")
	}
	return fs.ReadAt(*r.DFS)
}
