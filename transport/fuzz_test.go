package transport

import (
	"bytes"
	"testing"

	"sexton/api"
)

// FuzzReadFrame feeds arbitrary bytes through everything a peer's bytes
// reach before a handler: the frame reader, the envelope decoder and the
// strict and lenient body decoders (into a generic value and into real api
// bodies). None of it may panic, and a frame that decodes must re-encode to
// an envelope that decodes to the same header.
func FuzzReadFrame(f *testing.F) {
	seed := func(env *envelope, body any) {
		buf, err := encodeFrame(env, body)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append([]byte(nil), buf.Bytes()...))
		releaseFrame(buf)
	}
	seed(&envelope{kind: kindRequest, id: 7, method: "Echo", timeout: 1500e6}, &echoReq{N: 3, Pad: "x"})
	seed(&envelope{kind: kindResponse, id: 9, err: &api.Error{Code: api.CodeNotLeader, Leader: "a:1"}}, nil)
	seed(&envelope{kind: kindHello}, &hello{V: 1, Nonce: make([]byte, nonceLen), Auth: true, MaxFrame: 1 << 20})
	seed(&envelope{kind: kindRequest, id: 1, method: "BatchRemove"}, &api.KeysRequest{Keys: []string{"a", "b"}})
	f.Add([]byte{0, 0, 0, 5, 0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))

	f.Fuzz(func(t *testing.T, data []byte) {
		frame, err := readFrameBody(bytes.NewReader(data), 1<<16)
		if err != nil {
			return
		}
		env, err := decodeEnvelope(frame)
		if err != nil {
			return
		}
		var anything any
		_ = decodeBody(env.body, &anything, false)
		var keys api.KeysRequest
		_ = decodeBody(env.body, &keys, true)
		var batch api.BatchRemoveResponse
		_ = decodeBody(env.body, &batch, false)
		var hi hello
		_ = decodeBody(env.body, &hi, false)
		req := Request{Method: env.method, body: env.body}
		var echo echoReq
		_ = req.Decode(&echo)

		again, err := encodeFrame(&env, nil)
		if err != nil {
			t.Fatalf("re-encoding a decoded envelope: %v", err)
		}
		defer releaseFrame(again)
		back, err := decodeEnvelope(again.Bytes()[frameHeaderLen:])
		if err != nil {
			t.Fatalf("re-encoded envelope does not decode: %v", err)
		}
		if back.kind != env.kind || back.id != env.id || back.method != env.method || (back.err == nil) != (env.err == nil) {
			t.Fatalf("header changed in a round trip: %+v vs %+v", back, env)
		}
	})
}
