package transport

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// unknownMethod is the stats bucket for calls to methods nobody registered,
// so garbage method names cannot grow the stats without bound.
const unknownMethod = "(unknown)"

// MethodStats counts one method's calls.
type MethodStats struct {
	Method string
	Calls  uint64
	Errors uint64 // calls answered with an error
	// Total is the summed handler time.
	Total time.Duration
}

// ServerStats is a snapshot of a server's counters.
type ServerStats struct {
	// Methods is sorted by method name.
	Methods []MethodStats
	// Connections is the number of connections open now.
	Connections int
	// Refused counts connections refused in the handshake (bad token,
	// version, garbage, timeout).
	Refused uint64
	// Dropped counts authenticated connections closed for a protocol
	// violation (oversized frame, garbage, stalled frame).
	Dropped uint64
}

type methodCounter struct {
	calls, errors, nanos atomic.Uint64
}

type statsTable struct {
	methods sync.Map // method → *methodCounter
	refused atomic.Uint64
	dropped atomic.Uint64
}

func (t *statsTable) counter(method string) *methodCounter {
	if c, ok := t.methods.Load(method); ok {
		return c.(*methodCounter)
	}
	c, _ := t.methods.LoadOrStore(method, new(methodCounter))
	return c.(*methodCounter)
}

func (t *statsTable) record(method string, d time.Duration, failed bool) {
	c := t.counter(method)
	c.calls.Add(1)
	if failed {
		c.errors.Add(1)
	}
	c.nanos.Add(uint64(d))
}

func (t *statsTable) snapshot() []MethodStats {
	var out []MethodStats
	t.methods.Range(func(k, v any) bool {
		c := v.(*methodCounter)
		out = append(out, MethodStats{
			Method: k.(string),
			Calls:  c.calls.Load(),
			Errors: c.errors.Load(),
			Total:  time.Duration(c.nanos.Load()),
		})
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Method < out[j].Method })
	return out
}
