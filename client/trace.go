package client

import (
	"context"
	"time"

	"sexton/api"
)

// PutTrace receives the parts of the puts made with a context that carries
// it (WithPutTrace), as each part ends: what `sexton bench put` takes a
// put's latency apart with. The callbacks run on the put's goroutine, in
// the order the parts happen; a nil callback is skipped. They must be
// quick and safe for concurrent use when the context is shared.
type PutTrace struct {
	// MasterCall follows each mutating master round trip, retries
	// included: method is the RPC (PutStart, PutEnd, PutRevoke,
	// BatchPutStart, ...), err its outcome.
	MasterCall func(method string, took time.Duration, err error)
	// HolderWrite follows each write of a value to a holder replica, as
	// the client sees it (the holder's own share is in its metrics).
	HolderWrite func(endpoint string, size int, took time.Duration, err error)
}

type putTraceKey struct{}

// WithPutTrace returns ctx carrying t for the puts made with it.
func WithPutTrace(ctx context.Context, t *PutTrace) context.Context {
	return context.WithValue(ctx, putTraceKey{}, t)
}

func putTraceOf(ctx context.Context) *PutTrace {
	t, _ := ctx.Value(putTraceKey{}).(*PutTrace)
	return t
}

// traceMaster reports one master round trip that started at start.
func traceMaster(ctx context.Context, method string, start time.Time, err error) {
	if t := putTraceOf(ctx); t != nil && t.MasterCall != nil {
		t.MasterCall(method, time.Since(start), err)
	}
}

// traceHolderWrite reports one holder write that started at start.
func traceHolderWrite(ctx context.Context, r api.ReplicaLocation, size int, start time.Time, err error) {
	if t := putTraceOf(ctx); t != nil && t.HolderWrite != nil {
		t.HolderWrite(r.Endpoint, size, time.Since(start), err)
	}
}
