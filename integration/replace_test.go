package integration

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sexton/client"
	"sexton/internal/testutil"
)

// A holder SIGKILLed while puts stream in costs no failed put: a write the
// dead holder fails is revoked and the put is placed again away from it,
// even while the master still counts the holder alive (its heartbeat TTL
// has not run out). Every put acknowledged after the kill reads back.
func TestHolderCrashCostsNoFailedPuts(t *testing.T) {
	c := startCluster(t, 3)
	victim := c.startHolder(t, "h1", "crash")
	c.startHolder(t, "h2", "crash")
	c.startHolder(t, "h3", "crash")
	var acked sync.Map // key → value written after the kill
	var failed, done atomic.Int64
	var killed atomic.Bool
	stop := make(chan struct{})
	wait := testutil.RunWorkers(4, stop, func(w int) (func(i int) bool, func()) {
		cl, err := client.New(client.Config{Masters: c.addrs(), Timeout: 20 * time.Second, AttemptTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return func(i int) bool {
			key := fmt.Sprintf("crash/%d/%06d", w, i)
			after := killed.Load()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_, err := cl.Put(ctx, key, []byte(key), client.PutOptions{})
			cancel()
			done.Add(1)
			if err != nil {
				failed.Add(1)
				t.Errorf("put %s: %v", key, err)
				return true
			}
			if after {
				acked.Store(key, key)
			}
			return true
		}, cl.Close
	})
	time.Sleep(2 * time.Second)
	victim.kill()
	killed.Store(true)
	time.Sleep(4 * time.Second) // well inside the master's 10 s heartbeat TTL
	close(stop)
	wait()
	t.Logf("%d puts, %d failed", done.Load(), failed.Load())
	if failed.Load() > 0 {
		t.Fatalf("%d of %d puts failed around a holder crash", failed.Load(), done.Load())
	}
	cl, err := client.New(client.Config{Masters: c.addrs()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	n := 0
	acked.Range(func(k, v any) bool {
		n++
		got, _, err := cl.Get(context.Background(), k.(string))
		if err != nil || string(got) != v.(string) {
			t.Errorf("get %s after the crash: %q, %v", k, got, err)
		}
		return true
	})
	if n == 0 {
		t.Fatal("no put was acknowledged after the kill")
	}
}
