package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"time"

	"sexton/api"
)

// Transfer hears how a snapshot's transfer goes: its size once known,
// and the bytes moved.
type Transfer interface {
	SetTotal(n int64)
	Add(n int64)
}

// SaveSnapshot copies the leader's state to w a chunk at a time, each
// chunk's call bounded by chunkTimeout, and returns the bytes written.
// w holds the cluster's grant key once it is done: keep it the owner's
// only (docs/SECURITY.md, "What snapshots contain").
func (c *Client) SaveSnapshot(w io.Writer, chunkTimeout time.Duration, t Transfer) (int64, error) {
	req := api.SnapshotChunkRequest{}
	for {
		var chunk api.SnapshotChunk
		ctx, cancel := context.WithTimeout(context.Background(), chunkTimeout)
		err := c.Call(ctx, api.MethodSnapshotSave, &req, &chunk)
		cancel()
		if err != nil {
			return req.Offset, err
		}
		if _, err := w.Write(chunk.Data); err != nil {
			return req.Offset, err
		}
		t.SetTotal(chunk.Total)
		t.Add(int64(len(chunk.Data)))
		req = api.SnapshotChunkRequest{ID: chunk.ID, Offset: chunk.Offset + int64(len(chunk.Data))}
		if chunk.EOF {
			return req.Offset, nil
		}
	}
}

// RestoreSnapshot sends the snapshot r holds to the leader a chunk at a
// time, each chunk's call bounded by chunkTimeout (the last one installs
// the state, which takes longer than a call). The last chunk carries
// allowRollback: the leader refuses a snapshot older than its applied
// index without it. `sexton operator snapshot restore` checks the file
// first (snapshot.Inspect).
func (c *Client) RestoreSnapshot(r io.Reader, chunkTimeout time.Duration, allowRollback bool, t Transfer) (api.SnapshotRestoreResponse, error) {
	var idb [8]byte
	_, _ = rand.Read(idb[:])
	id := hex.EncodeToString(idb[:])
	buf := make([]byte, api.SnapshotChunkSize)
	var off int64
	for {
		nr, rerr := io.ReadFull(r, buf)
		eof := rerr == io.EOF || rerr == io.ErrUnexpectedEOF
		if rerr != nil && !eof {
			return api.SnapshotRestoreResponse{}, rerr
		}
		var resp api.SnapshotRestoreResponse
		ctx, cancel := context.WithTimeout(context.Background(), chunkTimeout)
		err := c.Call(ctx, api.MethodSnapshotRestore, &api.SnapshotChunk{ID: id, Offset: off, Data: buf[:nr], EOF: eof, AllowRollback: eof && allowRollback}, &resp)
		cancel()
		if err != nil {
			return resp, err
		}
		off += int64(nr)
		t.Add(int64(nr))
		if eof {
			return resp, nil
		}
	}
}
