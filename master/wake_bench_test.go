package master

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"sexton/api"
)

// BenchmarkDeleteConvergenceManyHolders: 1,000 holders long-poll the
// leader (in process, through its handlers: no sockets), each following
// its own segment (fetch, ack what it got); 8 clients put a key on a
// random holder and remove it, over and over. Reported: the time from a
// Remove's call (its commit included) to its holder's poll returning the
// task (p50, p99; remove-p99 is the Remove call alone, after-answer-p99
// what came after its answer), and
// the process CPU per delete (every goroutine: the leader, the holders'
// polls, the clients).
//
//	go test -run '^$' -bench DeleteConvergenceManyHolders -benchtime 2000x ./master
func BenchmarkDeleteConvergenceManyHolders(b *testing.B) {
	const holders, clients = 1000, 8
	tc := startCluster(b, 1, func(c *Config) { c.HolderTTL = time.Hour })
	n := tc.waitLeader(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	seg := func(i int) api.SegmentID { return api.SegmentID(fmt.Sprintf("s%04d", i)) }
	epochs := make([]uint64, holders)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range holders {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			r, err := n.handleMount(ctx, &api.MountLocalDiskRequest{ClientID: fmt.Sprintf("c%04d", i), Segment: seg(i),
				Pool: fmt.Sprintf("p%04d", i), Capacity: 1 << 40, Capabilities: []api.Capability{api.CapObjectTombstoneV1},
				Endpoint: "e", Process: "bench"})
			if err != nil {
				b.Errorf("mount %s: %v", seg(i), err)
				return
			}
			epochs[i] = r.MountEpoch
		}()
	}
	wg.Wait()
	if b.Failed() {
		return
	}

	// arrived[key] is signalled when key's task reaches its holder.
	var mu sync.Mutex
	arrived := map[string]chan time.Time{}
	var followers sync.WaitGroup
	for i := range holders {
		followers.Add(1)
		go func() {
			defer followers.Done()
			for ctx.Err() == nil {
				resp, err := n.handleFetchTasks(ctx, &api.FetchTasksRequest{Segment: seg(i), MountEpoch: epochs[i], WaitMillis: 30000})
				if err != nil || len(resp.Tasks) == 0 {
					continue
				}
				now := time.Now()
				results := make([]api.TaskResult, len(resp.Tasks))
				mu.Lock()
				for j, t := range resp.Tasks {
					if ch := arrived[t.Key]; ch != nil {
						ch <- now
						delete(arrived, t.Key)
					}
					results[j] = api.TaskResult{TaskID: t.ID, Key: t.Key, Incarnation: t.Incarnation, Outcome: api.AckRemoved}
				}
				mu.Unlock()
				_, _ = n.handleAckTasks(ctx, &api.AckTasksRequest{Segment: seg(i), MountEpoch: epochs[i], Results: results})
			}
		}()
	}
	defer followers.Wait()
	defer cancel()
	time.Sleep(200 * time.Millisecond) // let the polls park

	lat := make([]time.Duration, b.N)
	commit := make([]time.Duration, b.N) // the Remove call alone
	after := make([]time.Duration, b.N)  // from the Remove's answer (0 if the task came first)
	work := make(chan int)
	cpu0 := cpuTime()
	b.ResetTimer()
	var cw sync.WaitGroup
	for range clients {
		cw.Add(1)
		go func() {
			defer cw.Done()
			for k := range work {
				i := rand.IntN(holders)
				key := fmt.Sprintf("k%d", k)
				ps, err := n.handlePutStart(ctx, &api.PutStartRequest{Key: key, Size: 10, ReplicaNum: 1, Pool: fmt.Sprintf("p%04d", i)})
				if err != nil {
					b.Errorf("put %s: %v", key, err)
					return
				}
				if _, err := n.handlePutEnd(ctx, &api.PutEndRequest{Key: key, Incarnation: ps.Incarnation}); err != nil {
					b.Errorf("put end %s: %v", key, err)
					return
				}
				ch := make(chan time.Time, 1)
				mu.Lock()
				arrived[key] = ch
				mu.Unlock()
				removing := time.Now()
				if err := removeAndWait(n, &api.RemoveRequest{Key: key}); err != nil {
					b.Errorf("remove %s: %v", key, err)
					return
				}
				commit[k] = time.Since(removing)
				select {
				case at := <-ch:
					lat[k] = at.Sub(removing)
					after[k] = max(lat[k]-commit[k], 0)
				case <-time.After(time.Minute):
					b.Errorf("the task of %s never reached %s", key, seg(i))
					return
				}
			}
		}()
	}
	for k := range b.N {
		work <- k
	}
	close(work)
	cw.Wait()
	b.StopTimer()
	cpu := cpuTime() - cpu0
	slices.Sort(lat)
	slices.Sort(commit)
	slices.Sort(after)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(commit[len(commit)*99/100].Microseconds())/1000, "remove-p99-ms")
	b.ReportMetric(float64(after[len(after)*99/100].Microseconds())/1000, "after-answer-p99-ms")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/delete")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
