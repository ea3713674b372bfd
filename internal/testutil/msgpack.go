package testutil

import (
	"bytes"

	"github.com/vmihailenco/msgpack/v5"
)

// Fataler is the part of testing.TB the helpers here need, so that
// fuzz targets and benchmarks' own wrappers can pass theirs.
type Fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Msgpack encodes v as the module's writers do (compact integers) with
// map keys sorted, so that equal values give equal bytes.
func Msgpack(t Fataler, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.UseCompactInts(true)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(v); err != nil {
		t.Fatalf("encode %T: %v", v, err)
	}
	return buf.Bytes()
}
