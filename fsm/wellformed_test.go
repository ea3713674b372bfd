package fsm

import (
	"errors"
	"runtime"
	"testing"
)

// TestHugeClaimedLengthsAllocateNothing: an entry of a few bytes that
// claims 4 billion replicas, keys or bytes is refused as corrupt without
// the decoder allocating for the claim.
func TestHugeClaimedLengthsAllocateNothing(t *testing.T) {
	cases := map[string][]byte{
		// {"v":1,"replicas": array32 of 0xffffffff}
		"array32 replicas": append([]byte{byte(CmdPutStart), 0x82, 0xa1, 'v', 0x01, 0xa8}, append([]byte("replicas"), 0xdd, 0xff, 0xff, 0xff, 0xff)...),
		// {"v":1,"keys": array32}
		"array32 keys": append([]byte{byte(CmdRemove), 0x82, 0xa1, 'v', 0x01, 0xa4}, append([]byte("keys"), 0xdd, 0xff, 0xff, 0xff, 0xff)...),
		// {"v":1,"key": str32 of 4 GiB}
		"str32 key": append([]byte{byte(CmdPutEnd), 0x82, 0xa1, 'v', 0x01, 0xa3}, append([]byte("key"), 0xdb, 0xff, 0xff, 0xff, 0xff)...),
		// map32 body
		"map32 body": {byte(CmdRemove), 0xdf, 0xff, 0xff, 0xff, 0xff},
		// ext32 before "v"
		"ext32 field": {byte(CmdRemove), 0x82, 0xa1, 'x', 0xc9, 0xff, 0xff, 0xff, 0xff, 0x01},
	}
	nested := []byte{byte(CmdRemove), 0x81, 0xa1, 'x'}
	for i := 0; i < 100; i++ {
		nested = append(nested, 0x91)
	}
	cases["deep nesting"] = append(nested, 0xc0)
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := Decode(data)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrCorruptCommand) {
				t.Fatalf("Decode = %v, want ErrCorruptCommand", err)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<10 {
				t.Fatalf("decoding a %d-byte entry allocated %d bytes", len(data), grew)
			}
		})
	}
}
