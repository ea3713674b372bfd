package holder

import (
	"bytes"
	"context"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"sexton/api"
	"sexton/grant"
	"sexton/internal/holderwire"
	"sexton/transport"
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
		got, want := decodeWriteBoth(t, body)
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

// The client's HolderWrite body (holderwire.Body: a short head, then the
// value from the caller's slice) puts the value last, after the grant, and
// decodes unchanged both here and with the generic strict decoder a holder
// without decodeWriteRequest uses. The default struct encoding also puts
// the grant first.
func TestStreamedWriteBodyPutsTheValueLast(t *testing.T) {
	g := &api.WriteGrant{Segment: "seg", Key: "k", Incarnation: incN(3), Expires: 42, MAC: []byte("mac")}
	for _, req := range []api.HolderWriteRequest{
		{Key: "k", Tenant: "t", Incarnation: incN(3), Value: valueOf("big", 70000), Grant: g},
		{Key: "k", Incarnation: incN(3), Value: []byte("small"), Grant: g},
		{Key: "k", Incarnation: incN(3), Value: valueOf("mid", 300)},
		{Key: "k", Incarnation: incN(3)},
	} {
		var head bytes.Buffer
		enc := msgpack.NewEncoder(&head)
		enc.UseCompactInts(true)
		tail, err := holderwire.Body{Req: &req}.EncodeMsgpackHead(enc)
		if err != nil {
			t.Fatal(err)
		}
		if len(tail) != len(req.Value) || (len(tail) > 0 && &tail[0] != &req.Value[0]) {
			t.Fatalf("tail of %d bytes is not the request's value (%d bytes)", len(tail), len(req.Value))
		}
		if head.Len() > 256 {
			t.Fatalf("head of %d bytes holds more than the fields before the value", head.Len())
		}
		body := append(head.Bytes(), tail...)
		got, generic := decodeWriteBoth(t, body)
		for _, d := range []*api.HolderWriteRequest{got, &generic} {
			if d.Key != req.Key || d.Tenant != req.Tenant || d.Incarnation != req.Incarnation || !bytes.Equal(d.Value, req.Value) || !reflect.DeepEqual(d.Grant, req.Grant) {
				t.Fatalf("decoded %+v, want %+v", d, req)
			}
		}
		plain, err := msgpack.Marshal(&req)
		if err != nil {
			t.Fatal(err)
		}
		for name, b := range map[string][]byte{"holderwire head": head.Bytes(), "struct encoding": plain} {
			v := bytes.Index(b, []byte("\xa5value"))
			if v < 0 {
				t.Fatalf("%s: no value field", name)
			}
			if gi := bytes.Index(b, []byte("\xa5grant")); req.Grant != nil && (gi < 0 || gi > v) {
				t.Fatalf("%s: the grant (at %d) does not come before the value (at %d)", name, gi, v)
			}
		}
	}
}

// A write sent the way the client sends it (a value this large streams
// into the bucket file), with a grant signed under another key, is
// refused GRANT_REFUSED and stores nothing. A write whose body does not
// end in its value (an encoder that orders fields otherwise) is read
// whole and stored the same.
func TestStreamedWriteWithABadGrantStoresNothing(t *testing.T) {
	s := openT(t, t.TempDir(), StoreOptions{})
	defer s.Close()
	key := grant.NewKey()
	svc := &Service{store: s, grantKey: key}
	srv := transport.NewServer(transport.ServerConfig{MaxFrame: svc.dataMaxFrame()})
	svc.registerWrite(srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	conn, err := transport.Dial(context.Background(), ln.Addr().String(), transport.ClientConfig{MaxFrame: svc.dataMaxFrame()})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	value := valueOf("v", 1<<20)
	put := func(k string, inc api.ObjectIncarnation, signer []byte, size int64) error {
		g := grant.Sign(signer, api.WriteGrant{Segment: s.SegmentID(), Key: k, Incarnation: inc, Expires: time.Now().Add(time.Minute).UnixNano(), Size: size})
		return conn.Call(context.Background(), api.MethodHolderWrite, holderwire.Body{Req: &api.HolderWriteRequest{Key: k, Incarnation: inc, Value: value, Grant: &g}}, &api.Empty{})
	}
	before := s.Usage()
	if err := put("bad", incN(1), grant.NewKey(), int64(len(value))); api.CodeOf(err) != api.CodeGrantRefused {
		t.Fatalf("write under a foreign grant: %v, want GRANT_REFUSED", err)
	}
	// A grant for a value of another length: the streamed value is
	// refused before any byte of it is stored.
	if err := put("short", incN(5), key, int64(len(value))+1); api.CodeOf(err) != api.CodeGrantRefused {
		t.Fatalf("write of %d bytes under a grant for %d: %v, want GRANT_REFUSED", len(value), len(value)+1, err)
	}
	if u := s.Usage(); u != before {
		t.Fatalf("a refused write changed the store's usage from %+v to %+v", before, u)
	}
	for _, k := range []string{"bad", "short"} {
		if _, err := s.Get(k, incN(1)); err == nil {
			t.Fatalf("refused write %s is readable", k)
		}
	}
	if err := put("good", incN(2), key, int64(len(value))); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get("good", incN(2)); err != nil || !bytes.Equal(got, value) {
		t.Fatalf("granted write read back: %d bytes, %v", len(got), err)
	}
	type valueFirst struct {
		Value       []byte                `msgpack:"value"`
		Key         string                `msgpack:"key"`
		Incarnation api.ObjectIncarnation `msgpack:"inc"`
		Grant       *api.WriteGrant       `msgpack:"grant"`
	}
	g := grant.Sign(key, api.WriteGrant{Segment: s.SegmentID(), Key: "first", Incarnation: incN(3), Expires: time.Now().Add(time.Minute).UnixNano(), Size: int64(len(value))})
	if err := conn.Call(context.Background(), api.MethodHolderWrite, &valueFirst{Value: value, Key: "first", Incarnation: incN(3), Grant: &g}, &api.Empty{}); err != nil {
		t.Fatal(err)
	}
	mustGet(t, s, "first", incN(3), value)
	// A value given twice, in the body and as its streamed last field,
	// is refused.
	twice := map[string]any{"key": "twice", "inc": incN(4), "value": []byte("a")}
	body, _ := msgpack.Marshal(twice)
	body[0]++ // one more entry: a second "value", the streamed one
	body = append(append(body, 0xa5), "value"...)
	body = append(append(body, 0xc6, 0, 0x10, 0, 0), value...)
	if err := conn.Call(context.Background(), api.MethodHolderWrite, msgpack.RawMessage(body), &api.Empty{}); api.CodeOf(err) != api.CodeInvalidParams {
		t.Fatalf("value given twice: %v, want INVALID_PARAMS", err)
	}
}

// decodeWriteBoth decodes a HolderWrite body with decodeWriteRequest and
// with the generic strict decoder.
func decodeWriteBoth(t *testing.T, body []byte) (*api.HolderWriteRequest, api.HolderWriteRequest) {
	t.Helper()
	got, err := decodeWriteRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	var generic api.HolderWriteRequest
	dec := msgpack.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields(true)
	if err := dec.Decode(&generic); err != nil {
		t.Fatal(err)
	}
	return got, generic
}
