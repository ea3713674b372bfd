package holder

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"sexton/api"
)

// decodeWriteRequest decodes what the ordinary strict decoder decodes,
// refuses what it refuses, and hands the value out without copying it.
func TestDecodeWriteRequestAliasesTheValue(t *testing.T) {
	g := &api.WriteGrant{Segment: "seg", Key: "k", Incarnation: incN(3), Expires: 42, MAC: []byte("mac")}
	for _, req := range []api.HolderWriteRequest{
		{Key: "k", Tenant: "t", Incarnation: incN(3), Value: []byte("small"), Grant: g},
		{Key: "k", Incarnation: incN(3), Value: valueOf("big", 70000)}, // bin32
		{Key: "k", Incarnation: incN(3), Value: valueOf("mid", 300)},   // bin16
		{Key: "k", Incarnation: incN(3)},                               // nil value
	} {
		body, err := msgpack.Marshal(&req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeWriteRequest(body)
		if err != nil {
			t.Fatal(err)
		}
		var want api.HolderWriteRequest
		dec := msgpack.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields(true)
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(*got, want) && !(len(got.Value) == 0 && len(want.Value) == 0) {
			t.Fatalf("decoded %+v, want %+v", got, want)
		}
		if len(req.Value) > 0 {
			i := bytes.Index(body, req.Value)
			body[i] ^= 0xff
			if got.Value[0] != body[i] {
				t.Fatal("the value was copied out of the body")
			}
		}
	}
	// An unknown field is refused, as by every strict decode.
	body, _ := msgpack.Marshal(map[string]any{"key": "k", "value": []byte("v"), "future": 1})
	if _, err := decodeWriteRequest(body); api.CodeOf(err) != api.CodeInvalidParams {
		t.Fatalf("unknown field: %v", err)
	}
	// Malformed bodies are refused.
	for _, b := range [][]byte{{}, {0x81}, {0x92, 0x01, 0x02}, append([]byte{0x81, 0xa5}, "value"...)} {
		if _, err := decodeWriteRequest(b); api.CodeOf(err) != api.CodeInvalidParams {
			t.Fatalf("%x: %v", b, err)
		}
	}
	// A value sent as str is decoded the ordinary way.
	body, _ = msgpack.Marshal(map[string]any{"key": "k", "value": "as a string"})
	if got, err := decodeWriteRequest(body); err != nil || string(got.Value) != "as a string" {
		t.Fatalf("str value: %+v %v", got, err)
	}
}
