package transport

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sexton/api"
)

type pendingCall struct {
	req   *echoReq
	reply func(*echoResp, error)
}

// An asynchronous handler queues its requests; another goroutine answers
// them all at once, in reverse order. Every caller gets its own answer,
// and the read loop kept reading while the earlier requests waited (the
// answering goroutine waits for all of them first).
func TestAsyncHandlerAnsweredLaterFromAnotherGoroutine(t *testing.T) {
	const callers = 16
	queued := make(chan pendingCall, callers)
	ts := startServer(t, ServerConfig{}, func(s *Server) {
		RegisterAsync(s, "Gather", func(req *echoReq, reply func(*echoResp, error)) {
			queued <- pendingCall{req, reply}
		})
	})
	go func() {
		var all []pendingCall
		for range callers {
			all = append(all, <-queued)
		}
		for i := len(all) - 1; i >= 0; i-- {
			all[i].reply(&echoResp{N: all[i].req.N * 3}, nil)
		}
	}()
	c := dial(t, ts.addr, ClientConfig{})
	callTimesThree(t, c, "Gather", callers)
	var counted uint64
	for _, m := range ts.Stats().Methods {
		if m.Method == "Gather" {
			counted = m.Calls
		}
	}
	if counted != callers {
		t.Fatalf("stats count %d Gather calls, want %d", counted, callers)
	}
}

// A panic is INTERNAL, a second reply is ignored, a decode error is
// answered without the handler; the connection keeps working.
func TestAsyncHandlerPanicsAndRepliesTwice(t *testing.T) {
	var ran atomic.Int64
	ts := startServer(t, ServerConfig{}, func(s *Server) {
		s.HandleAsync("Boom", func(*Request, Reply) { panic("handler bug") })
		RegisterAsync(s, "Twice", func(req *echoReq, reply func(*echoResp, error)) {
			ran.Add(1)
			reply(&echoResp{N: req.N}, nil)
			reply(nil, api.Errorf(api.CodeInternal, "second reply"))
		})
	})
	c := dial(t, ts.addr, ClientConfig{})
	ae := requireCode(t, c.Call(context.Background(), "Boom", nil, nil), api.CodeInternal)
	if !strings.Contains(ae.Message, "Boom panicked") {
		t.Fatalf("panic message: %q", ae.Message)
	}
	var resp echoResp
	if err := c.Call(context.Background(), "Twice", &echoReq{N: 7}, &resp); err != nil || resp.N != 7 {
		t.Fatalf("Twice: %v, %d", err, resp.N)
	}
	requireCode(t, c.Call(context.Background(), "Twice", "not a struct", nil), api.CodeInvalidParams)
	if ran.Load() != 1 {
		t.Fatalf("handler ran %d times, want 1 (not on the undecodable request)", ran.Load())
	}
	mustEcho(t, c, 3)
}

// A client that sends requests and reads no answers must not hold up the
// goroutine that answers them: with the socket's buffers and the writer's
// queue full, a reply hands its frame to a goroutine of its own. Every
// reply returns promptly, and closing the server still waits for the
// frames queued that way (the goroutine check in TestMain).
func TestAsyncReplyDoesNotWaitForAClientThatDoesNotRead(t *testing.T) {
	const calls = 200 // × 256 KiB: far more than loopback buffers and the writer's queue hold
	queued := make(chan Reply, calls)
	ts := startServer(t, ServerConfig{}, func(s *Server) {
		s.HandleAsync("Big", func(_ *Request, reply Reply) { queued <- reply })
	})
	nc, _ := rawHandshake(t, ts.addr, "")
	env := []byte{0x96, byte(kindRequest), 0, 0xa3, 'B', 'i', 'g', 0, 0xc0, 0xc0}
	for i := range calls {
		env[2] = byte(i % 100) // a positive fixint id
		frame := append([]byte{0, 0, 0, byte(len(env))}, env...)
		if _, err := nc.Write(frame); err != nil {
			t.Fatal(err)
		}
	}
	body := &echoResp{Pad: strings.Repeat("x", 256<<10)}
	start := time.Now()
	for range calls {
		select {
		case reply := <-queued:
			reply(body, nil)
		case <-time.After(10 * time.Second):
			t.Fatal("requests did not all reach the handler")
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("%d replies to a client that reads nothing took %s", calls, d)
	}
	nc.Close()
	ts.stop()
}

// A reply waiting for the socket of a client that reads nothing keeps its
// request's slot: the read loop stops after MaxInflightPerConn of them
// plus what the writer's queue and the socket buffers take, instead of
// reading every request and parking a goroutine and a frame for each.
func TestAsyncRepliesToAClientThatDoesNotReadKeepTheirSlots(t *testing.T) {
	const limit, calls = 4, 400
	var handled atomic.Int64
	body := &echoResp{Pad: strings.Repeat("x", 256<<10)}
	ts := startServer(t, ServerConfig{MaxInflightPerConn: limit}, func(s *Server) {
		s.HandleAsync("Big", func(_ *Request, reply Reply) {
			handled.Add(1)
			reply(body, nil)
		})
	})
	nc, _ := rawHandshake(t, ts.addr, "")
	env := []byte{0x96, byte(kindRequest), 1, 0xa3, 'B', 'i', 'g', 0, 0xc0, 0xc0}
	frame := append([]byte{0, 0, 0, byte(len(env))}, env...)
	go func() {
		for range calls {
			if _, err := nc.Write(frame); err != nil {
				return
			}
		}
	}()
	time.Sleep(time.Second)
	// The writer's queue holds 64 frames and loopback buffers a few MiB
	// (a few dozen 256 KiB frames); all 400 means nothing held back.
	if n := handled.Load(); n >= calls/2 {
		t.Fatalf("%d of %d requests handled for a client that reads no answer, limit %d", n, calls, limit)
	}
	nc.Close()
	ts.stop()
}

// MaxInflightPerConn bounds unanswered asynchronous requests too: the
// read loop stops reading while that many wait for their reply.
func TestAsyncInflightBoundedPerConnection(t *testing.T) {
	const limit, calls = 3, 9
	queued := make(chan Reply, calls)
	ts := startServer(t, ServerConfig{MaxInflightPerConn: limit}, func(s *Server) {
		s.HandleAsync("Hold", func(_ *Request, reply Reply) { queued <- reply })
	})
	c := dial(t, ts.addr, ClientConfig{CallTimeout: time.Minute})
	errs := make(chan error, calls)
	for range calls {
		go func() { errs <- c.Call(context.Background(), "Hold", nil, nil) }()
	}
	for answered := 0; answered < calls; {
		time.Sleep(100 * time.Millisecond) // every chance to (wrongly) read more
		if n := len(queued); n > limit {
			for len(queued) > 0 { // or the server's close waits for them
				(<-queued)(nil, nil)
			}
			t.Fatalf("%d unanswered requests reached the handler, limit %d", n, limit)
		} else if n == 0 {
			t.Fatal("no request reached the handler")
		}
		for len(queued) > 0 {
			(<-queued)(nil, nil)
			answered++
		}
	}
	for range calls {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// Close waits for an asynchronous request's reply, as it waits for a
// running handler.
func TestServerCloseWaitsForAsyncReplies(t *testing.T) {
	queued := make(chan Reply, 1)
	ts := startServer(t, ServerConfig{}, func(s *Server) {
		s.HandleAsync("Hold", func(_ *Request, reply Reply) { queued <- reply })
	})
	c := dial(t, ts.addr, ClientConfig{})
	go func() { _ = c.Call(context.Background(), "Hold", nil, nil) }()
	reply := <-queued
	stopped := make(chan struct{})
	go func() { ts.stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("Close returned with a reply outstanding")
	case <-time.After(200 * time.Millisecond):
	}
	reply(nil, nil)
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return after the reply")
	}
}

func TestHandleAsyncRefusesADuplicateMethod(t *testing.T) {
	s := NewServer(ServerConfig{})
	Register(s, "M", func(context.Context, *echoReq) (*echoResp, error) { return nil, nil })
	defer func() {
		if recover() == nil {
			t.Fatal("a method registered both ways did not panic")
		}
	}()
	s.HandleAsync("M", func(*Request, Reply) {})
}
