package transport

import (
	"bytes"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// decodeBody decodes one msgpack value (already checked by decodeEnvelope)
// into v. strict refuses map keys that v has no field for, so a peer that
// sends a field this build does not understand is told so instead of having
// it silently dropped.
func decodeBody(body []byte, v any, strict bool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("msgpack decoder panicked: %v", r)
		}
	}()
	dec := msgpack.GetDecoder()
	defer msgpack.PutDecoder(dec)
	dec.Reset(bytes.NewReader(body))
	dec.DisallowUnknownFields(strict)
	return dec.Decode(v)
}
