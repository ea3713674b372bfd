package transport

import (
	"context"

	"sexton/api"
)

// Request is one call as a handler sees it.
type Request struct {
	// Method is the method name the client called.
	Method string
	// Peer is the client's remote address.
	Peer string
	// body is the request's msgpack body; it aliases the frame buffer and
	// is bounded by the server's MaxFrame.
	body []byte
}

// Decode decodes the body into v strictly: a field v does not have is an
// INVALID_PARAMS error naming it, so a newer client's field that this
// server would silently ignore (and so misapply the request) is refused.
func (r *Request) Decode(v any) error {
	if err := decodeBody(r.body, v, true); err != nil {
		return api.Errorf(api.CodeInvalidParams, "decode %s request: %v", r.Method, err)
	}
	return nil
}

// DecodeLenient decodes the body into v, ignoring fields v does not have.
func (r *Request) DecodeLenient(v any) error {
	if err := decodeBody(r.body, v, false); err != nil {
		return api.Errorf(api.CodeInvalidParams, "decode %s request: %v", r.Method, err)
	}
	return nil
}

// Body is the raw msgpack body (valid only during the handler call).
func (r *Request) Body() []byte { return r.body }

// HandlerFunc serves one method. The returned value is msgpack-encoded as
// the response body; a returned error is sent as an *api.Error (an error
// that is or wraps one keeps its code, anything else becomes INTERNAL). ctx
// is cancelled when the connection closes, the server closes, or the
// caller's deadline (sent with the request) passes.
type HandlerFunc func(ctx context.Context, req *Request) (any, error)

// Register serves method with a typed function: the body is decoded
// strictly into a new Req, and the *Resp returned is the response body.
func Register[Req any, Resp any](s *Server, method string, fn func(ctx context.Context, req *Req) (*Resp, error)) {
	s.Handle(method, func(ctx context.Context, r *Request) (any, error) {
		req := new(Req)
		if err := r.Decode(req); err != nil {
			return nil, err
		}
		resp, err := fn(ctx, req)
		if err != nil {
			return nil, err
		}
		return resp, nil
	})
}
