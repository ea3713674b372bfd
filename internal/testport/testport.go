// Package testport hands out loopback addresses to tests that start
// servers on fixed ports (a restarted node must get its address back, and a
// child process must bind what the test told it).
package testport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
)

// Range hands out addresses on 127.0.0.1 from ports [Lo, Hi), each at most
// once per process. Keep ranges below Linux's ephemeral range (32768+), so
// no outgoing connection takes a port between the check here and the
// server binding it, and give each test package its own range, since
// `go test ./...` runs packages as parallel processes.
type Range struct {
	Lo, Hi int

	mu   sync.Mutex
	used map[int]bool
}

// Addr returns a loopback address nobody listened on a moment ago.
func (r *Range) Addr(t testing.TB) string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.used == nil {
		r.used = map[int]bool{}
	}
	for tries := 0; tries < 1000; tries++ {
		p := r.Lo + rand.IntN(r.Hi-r.Lo)
		if r.used[p] {
			continue
		}
		addr := fmt.Sprintf("127.0.0.1:%d", p)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		l.Close()
		r.used[p] = true
		return addr
	}
	t.Fatalf("no free loopback port in %d-%d", r.Lo, r.Hi-1)
	return ""
}
