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
	// tail is a streamed method's last body field (HandleStream).
	tail *Tail
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

// Reply answers an asynchronous request (AsyncHandlerFunc): resp is
// encoded as the response body and err sent as for a HandlerFunc. Only
// the first call counts; later ones are ignored.
type Reply func(resp any, err error)

// AsyncHandlerFunc serves one method without a goroutine of its own: it
// runs on the connection's read loop, so it must not block, and it
// answers through reply, at once or later from any goroutine. req is
// valid only during the call (decode it there). A request answered this
// way holds one of the connection's in-flight slots until it is answered,
// like any other, and the connection's close waits for the answer.
//
// What it is for: a method whose handler only queues the request for
// another goroutine that answers many at once (the master's group commit
// of removes). With a HandlerFunc each queued request parks a goroutine,
// and waking 16 of them one after the other, on the way in and again on
// the way out, cost the master's 16-client remove cycle about 8 % on a
// two-core box (docs/SCALING.md, "The write path").
type AsyncHandlerFunc func(req *Request, reply Reply)

// RegisterAsync serves method with a typed asynchronous function: the
// body is decoded strictly into a new Req on the read loop (a decode
// error is answered at once), then fn gets it with a typed reply.
func RegisterAsync[Req any, Resp any](s *Server, method string, fn func(req *Req, reply func(*Resp, error))) {
	s.HandleAsync(method, func(r *Request, reply Reply) {
		req := new(Req)
		if err := r.Decode(req); err != nil {
			reply(nil, err)
			return
		}
		fn(req, func(resp *Resp, err error) {
			if err != nil {
				reply(nil, err)
				return
			}
			reply(resp, nil)
		})
	})
}
