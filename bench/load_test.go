package bench

import (
	"strings"
	"sync"
	"testing"
	"time"

	"sexton/api"
	"sexton/client"
	"sexton/devcluster"
)

// syncBuffer is a report many goroutines may write.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testEnv starts a one-process cluster and returns an Env onto it that
// keeps its report in a syncBuffer, and its session client.
func testEnv(t *testing.T) (*Env, *client.Client) {
	t.Helper()
	c, err := devcluster.Start(devcluster.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	newClient := func() (*client.Client, error) {
		cl, err := client.New(client.Config{Masters: []string{c.MasterAddr()}, Timeout: 10 * time.Second})
		if err == nil {
			t.Cleanup(cl.Close)
		}
		return cl, err
	}
	cl, err := newClient()
	if err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	return &Env{
		Masters:   []string{c.MasterAddr()},
		Timeout:   10 * time.Second,
		Client:    func() (*client.Client, error) { return cl, nil },
		NewClient: newClient,
		Out:       out,
		Err:       out,
	}, cl
}

// TestLoadRepeatCountsWhatAnEarlierAttemptCommitted: when bench load sends
// a batch again after a call got no answer, the items that attempt did not
// commit count as committed exactly when their key exists.
func TestLoadRepeatCountsWhatAnEarlierAttemptCommitted(t *testing.T) {
	e, cl := testEnv(t)
	if err := Load(e, LoadOptions{Objects: 2, Clients: 16, Batch: api.MaxBatchPutItems, Segments: 1, Prefix: "t/rep/", Size: 4096}); err != nil {
		t.Fatalf("%v\n%s", err, e.Out)
	}
	items := []api.PutStartRequest{{Key: "t/rep/0000000000"}, {Key: "t/rep/never"}, {Key: "t/rep/0000000001"}, {Key: "t/rep/now"}}
	n, itemErr, err := settleRepeat(e, cl, items, []int{3}, api.ErrObjectAlreadyExists)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 || itemErr == nil || !strings.Contains(itemErr.Error(), "1 objects of a batch sent again were not created") {
		t.Errorf("settleRepeat = %d, %v; want 3 and an error naming the 1 not created", n, itemErr)
	}
	n, itemErr, err = settleRepeat(e, cl, items[:1], nil, api.ErrObjectAlreadyExists)
	if err != nil || n != 1 || itemErr != nil {
		t.Errorf("settleRepeat of an existing key = %d, %v, %v; want 1, nil, nil", n, itemErr, err)
	}
}
