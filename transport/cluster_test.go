package transport

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sexton/api"
)

// node is a fake master: its "Op" handler answers with whatever answer
// returns, and counts its calls.
type node struct {
	*testServer
	calls atomic.Int64
}

func startNode(t *testing.T, answer func() error) *node {
	t.Helper()
	n := &node{}
	n.testServer = startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle("Op", func(ctx context.Context, req *Request) (any, error) {
			n.calls.Add(1)
			if err := answer(); err != nil {
				return nil, err
			}
			return &echoResp{N: 42}, nil
		})
	})
	return n
}

// deadAddr is a loopback address nobody listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func fastCluster(addrs []string, maxWait time.Duration) *ClusterClient {
	return NewClusterClient(addrs, ClusterConfig{
		ClientConfig: ClientConfig{DialTimeout: time.Second, CallTimeout: 2 * time.Second},
		MaxWait:      maxWait,
		BackoffMin:   5 * time.Millisecond,
		BackoffMax:   40 * time.Millisecond,
	})
}

// NOT_LEADER with a hint is followed, even to an address not in the list;
// the next call goes straight to the leader it learned.
func TestClusterFollowsLeaderHint(t *testing.T) {
	leader := startNode(t, func() error { return nil })
	follower := startNode(t, func() error {
		return &api.Error{Code: api.CodeNotLeader, Message: "not the leader", Leader: leader.addr}
	})
	other := startNode(t, func() error { return nil })
	cc := fastCluster([]string{follower.addr, other.addr}, 5*time.Second)
	defer cc.Close()

	var resp echoResp
	if err := cc.Call(context.Background(), "Op", nil, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.N != 42 || cc.Leader() != leader.addr {
		t.Fatalf("resp %d leader %q, want 42 and %q", resp.N, cc.Leader(), leader.addr)
	}
	if other.calls.Load() != 0 {
		t.Fatal("the hint was not followed: the next address was tried")
	}
	if err := cc.Call(context.Background(), "Op", nil, nil); err != nil {
		t.Fatal(err)
	}
	if follower.calls.Load() != 1 || leader.calls.Load() != 2 {
		t.Fatalf("follower %d leader %d calls, want 1 and 2", follower.calls.Load(), leader.calls.Load())
	}
}

// Without a hint, and past a dead address and an UNAVAILABLE answer, the
// client walks the list to the node that serves.
func TestClusterTriesNextAddressWithoutHint(t *testing.T) {
	noHint := startNode(t, func() error { return api.Errorf(api.CodeNotLeader, "election in progress") })
	busy := startNode(t, func() error { return api.Errorf(api.CodeUnavailable, "no quorum") })
	good := startNode(t, func() error { return nil })
	cc := fastCluster([]string{noHint.addr, deadAddr(t), busy.addr, good.addr}, 5*time.Second)
	defer cc.Close()
	if err := cc.Call(context.Background(), "Op", nil, nil); err != nil {
		t.Fatal(err)
	}
	if cc.Leader() != good.addr {
		t.Fatalf("leader %q, want %q", cc.Leader(), good.addr)
	}
	if noHint.calls.Load() != 1 || busy.calls.Load() != 1 || good.calls.Load() != 1 {
		t.Fatalf("calls %d %d %d, want 1 each", noHint.calls.Load(), busy.calls.Load(), good.calls.Load())
	}
}

// A node that becomes leader only after a while (an election) is found by
// retrying rounds with backoff.
func TestClusterRetriesThroughAnElection(t *testing.T) {
	var elected atomic.Bool
	a := startNode(t, func() error { return api.Errorf(api.CodeNotLeader, "no leader") })
	var b *node
	b = startNode(t, func() error {
		if b.calls.Load() >= 4 {
			elected.Store(true)
			return nil
		}
		return api.Errorf(api.CodeNotLeader, "no leader")
	})
	cc := fastCluster([]string{a.addr, b.addr}, 10*time.Second)
	defer cc.Close()
	if err := cc.Call(context.Background(), "Op", nil, nil); err != nil {
		t.Fatal(err)
	}
	if !elected.Load() || cc.Leader() != b.addr {
		t.Fatalf("elected %v leader %q", elected.Load(), cc.Leader())
	}
}

// A master that answered NOT_LEADER and then stops answering: the last
// attempt is cut by the give-up deadline, and the message still says what
// it answered before (not only "deadline exceeded").
func TestClusterGiveUpKeepsAnEarlierAnswer(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var n *node
	n = startNode(t, func() error {
		if n.calls.Load() > 1 {
			<-release
		}
		return api.Errorf(api.CodeNotLeader, "no leader known")
	})
	cc := fastCluster([]string{n.addr}, 300*time.Millisecond)
	defer cc.Close()
	ae := requireCode(t, cc.Call(context.Background(), "Op", nil, nil), api.CodeUnavailable)
	for _, want := range []string{"deadline exceeded", "no leader known"} {
		if !strings.Contains(ae.Message, want) {
			t.Fatalf("give-up message lacks %q: %q", want, ae.Message)
		}
	}
}

// With every address down the client gives up after MaxWait with an
// UNAVAILABLE error that names every address and what went wrong there.
func TestClusterAllDownGivesUpNamingEveryAddress(t *testing.T) {
	refusing := startNode(t, func() error { return api.Errorf(api.CodeNotLeader, "no leader known") })
	addrs := []string{deadAddr(t), deadAddr(t), refusing.addr}
	cc := fastCluster(addrs, 300*time.Millisecond)
	defer cc.Close()
	err := cc.Call(context.Background(), "Op", nil, nil)
	ae := requireCode(t, err, api.CodeUnavailable)
	for _, a := range addrs {
		if !strings.Contains(ae.Message, a) {
			t.Fatalf("give-up message does not name %s: %q", a, ae.Message)
		}
	}
	for _, want := range []string{"gave up after", "connection refused", "no leader known", "Op"} {
		if !strings.Contains(ae.Message, want) {
			t.Fatalf("give-up message lacks %q: %q", want, ae.Message)
		}
	}
	if refusing.calls.Load() < 2 {
		t.Fatalf("only %d rounds were tried in 300ms", refusing.calls.Load())
	}
}

// The caller's ctx bounds the whole call too, and the error says so.
func TestClusterHonoursCallerContext(t *testing.T) {
	cc := fastCluster([]string{deadAddr(t)}, time.Hour)
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := cc.Call(ctx, "Op", nil, nil)
	requireCode(t, err, api.CodeUnavailable)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v should match DeadlineExceeded", err)
	}
}

// An application error returns at once; no other node is asked.
func TestClusterApplicationErrorReturnsAtOnce(t *testing.T) {
	a := startNode(t, func() error { return api.Errorf(api.CodeObjectNotFound, "no such key") })
	b := startNode(t, func() error { return nil })
	cc := fastCluster([]string{a.addr, b.addr}, 5*time.Second)
	defer cc.Close()
	err := cc.Call(context.Background(), "Op", nil, nil)
	if !errors.Is(err, api.ErrObjectNotFound) || b.calls.Load() != 0 {
		t.Fatalf("err %v, other node called %d times", err, b.calls.Load())
	}
}

// NoRetryAfterSend: an answer that leaves the outcome unknown is returned,
// not retried elsewhere; NOT_LEADER is still followed since the node did
// not act. Without the option the call moves on.
func TestClusterNoRetryAfterSend(t *testing.T) {
	unsure := startNode(t, func() error { return api.Errorf(api.CodeUnavailable, "leadership lost during apply") })
	good := startNode(t, func() error { return nil })
	cc := fastCluster([]string{unsure.addr, good.addr}, 5*time.Second)
	defer cc.Close()
	err := cc.Call(context.Background(), "Op", nil, nil, NoRetryAfterSend())
	requireCode(t, err, api.CodeUnavailable)
	if good.calls.Load() != 0 {
		t.Fatal("retried an unsure call despite NoRetryAfterSend")
	}
	if err := cc.Call(context.Background(), "Op", nil, nil); err != nil || good.calls.Load() != 1 {
		t.Fatalf("default call: %v, good node called %d times", err, good.calls.Load())
	}

	follower := startNode(t, func() error { return &api.Error{Code: api.CodeNotLeader, Leader: good.addr} })
	cc2 := fastCluster([]string{follower.addr}, 5*time.Second)
	defer cc2.Close()
	if err := cc2.Call(context.Background(), "Op", nil, nil, NoRetryAfterSend()); err != nil {
		t.Fatalf("NOT_LEADER not followed under NoRetryAfterSend: %v", err)
	}
}

// A wrong cluster token fails at once with the clear error, not after
// MaxWait of retries.
func TestClusterWrongTokenFailsAtOnce(t *testing.T) {
	ts := startServer(t, ServerConfig{Token: "right"}, nil)
	cc := NewClusterClient([]string{ts.addr}, ClusterConfig{ClientConfig: ClientConfig{Token: "wrong"}, MaxWait: time.Hour})
	defer cc.Close()
	ae := requireCode(t, cc.Call(context.Background(), "Echo", &echoReq{}, nil), api.CodeUnauthenticated)
	if !strings.Contains(ae.Message, "cluster token mismatch") {
		t.Fatalf("message %q", ae.Message)
	}
}

// A leader that goes away mid-life is replaced: the client follows to the
// node that took over.
func TestClusterFailsOverWhenLeaderDies(t *testing.T) {
	first := startNode(t, func() error { return nil })
	second := startNode(t, func() error { return nil })
	cc := fastCluster([]string{first.addr, second.addr}, 5*time.Second)
	defer cc.Close()
	if err := cc.Call(context.Background(), "Op", nil, nil); err != nil || cc.Leader() != first.addr {
		t.Fatalf("first call: %v leader %q", err, cc.Leader())
	}
	first.stop()
	if err := cc.Call(context.Background(), "Op", nil, nil); err != nil {
		t.Fatal(err)
	}
	if cc.Leader() != second.addr || second.calls.Load() != 1 {
		t.Fatalf("leader %q, second called %d times", cc.Leader(), second.calls.Load())
	}
}
