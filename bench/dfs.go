package bench

import (
	"crypto/rand"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"sexton/api"
	"sexton/client"
	"sexton/dfsio"
	"sexton/fsm/dfsalloc"
)

// DFSOptions are bench dfs's settings.
type DFSOptions struct {
	// N allocations per allocation phase; IONum objects per size of the
	// I/O phase, from Clients concurrent clients; Batch > 0 adds the
	// batched allocation phase.
	N, IONum, Clients, Batch int
	Sizes                    []Size
}

// DFS measures, against a running cluster whose masters and this
// process share the MOONCAKE_DFS_* settings: DFS allocations per second
// through Raft (PutStart+PutEnd without writing the value; one client,
// then 64 concurrent ones, which the leader's Raft batches), and DFS put
// and get throughput on the posix adapter next to raw pwrite/pread of the
// same sizes in the same root, in the same run. With o.Batch N it also
// allocates in N-object batches (one Raft entry per batch start and end).
func DFS(e *Env, o DFSOptions) error {
	settings, err := dfsio.SettingsFromEnv(os.Getenv)
	if err != nil || !settings.Enabled() {
		return fmt.Errorf("bench dfs needs the cluster's MOONCAKE_DFS_* settings (%s): %v", dfsio.EnvRoot, err)
	}
	sc, cl, err := e.twoClients()
	if err != nil {
		return err
	}
	prefix := fmt.Sprintf("bench-dfs/%d/", time.Now().UnixNano())
	var keys []string
	var kn atomic.Int64
	alloc := func(tag string) func(int) error {
		return func(i int) error {
			ctx, c := e.ctx()
			defer c()
			key := fmt.Sprintf("%s%s/%08d", prefix, tag, i)
			var st api.PutStartResponse
			if err := cl.Call(ctx, api.MethodPutStart, &api.PutStartRequest{Key: key, Size: 4096, DFSReplicaNum: 1}, &st); err != nil {
				return err
			}
			kn.Add(1)
			return cl.Call(ctx, api.MethodPutEnd, &api.PutEndRequest{Key: key, Incarnation: st.Incarnation}, nil)
		}
	}
	for _, c := range []int{1, 64} {
		tag := fmt.Sprintf("alloc%d", c)
		if _, err := e.runParallel(fmt.Sprintf("dfs allocate+commit, %d client(s)", c), o.N, c, 1, alloc(tag)); err != nil {
			return err
		}
		for i := 0; i < o.N; i++ {
			keys = append(keys, fmt.Sprintf("%s%s/%08d", prefix, tag, i))
		}
	}
	if o.Batch > 0 {
		for _, c := range []int{1, 4} {
			bk, err := benchBatchAlloc(e, cl, fmt.Sprintf("%sc%d/", prefix, c), o.N, o.Batch, c)
			if err != nil {
				return err
			}
			keys = append(keys, bk...)
		}
	}
	benchRemoveKeys(e, cl, keys)

	for _, size := range o.Sizes {
		s, sz := size.Text, size.Bytes
		value := make([]byte, sz)
		_, _ = rand.Read(value)
		mb := float64(sz) / (1 << 20)
		tag := fmt.Sprintf("io%d", sz)
		putRate, _ := e.runParallel(fmt.Sprintf("dfs put %s", s), o.IONum, o.Clients, 1, func(i int) error {
			ctx, c := e.ctx()
			defer c()
			_, err := sc.Put(ctx, fmt.Sprintf("%s%s/%08d", prefix, tag, i), value, client.PutOptions{DFSReplicas: 1})
			return err
		})
		getRate, _ := e.runParallel(fmt.Sprintf("dfs get %s", s), o.IONum, o.Clients, 1, func(i int) error {
			ctx, c := e.ctx()
			defer c()
			v, _, err := sc.Get(ctx, fmt.Sprintf("%s%s/%08d", prefix, tag, i))
			if err == nil && len(v) != len(value) {
				err = fmt.Errorf("read %d bytes, want %d", len(v), len(value))
			}
			return err
		})
		rawW, rawR, err := rawPosixRates(e, settings.Root, value, o.IONum, o.Clients, settings.Fsync)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.Out, "dfs %s: put %.1f MB/s (raw pwrite %.1f MB/s), get %.1f MB/s (raw pread %.1f MB/s)\n",
			s, putRate*mb, rawW*mb, getRate*mb, rawR*mb)
		var ks []string
		for i := 0; i < o.IONum; i++ {
			ks = append(ks, fmt.Sprintf("%s%s/%08d", prefix, tag, i))
		}
		benchRemoveKeys(e, cl, ks)
	}
	return nil
}

func benchRemoveKeys(e *Env, cl *client.Client, keys []string) {
	for start := 0; start < len(keys); start += api.MaxBatchKeys {
		chunk := keys[start:min(start+api.MaxBatchKeys, len(keys))]
		_ = e.callVia(cl, api.MethodBatchRemove, &api.KeysRequest{Keys: chunk}, &api.BatchRemoveResponse{})
	}
}

// rawPosixRates is the baseline: n pwrites then n preads of value at
// aligned offsets of one scratch file in root (ops/s), with the same
// concurrency and the same open-per-operation the adapter does.
func rawPosixRates(e *Env, root string, value []byte, n, clients int, fsync bool) (float64, float64, error) {
	path := filepath.Join(root, fmt.Sprintf("bench-raw-%d.tmp", time.Now().UnixNano()))
	stride := (int64(len(value)) + 4095) &^ 4095
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return 0, 0, err
	}
	defer os.Remove(path)
	if err := unix.Fallocate(fd, 0, 0, stride*int64(n)); err != nil {
		_ = unix.Ftruncate(fd, stride*int64(n))
	}
	unix.Close(fd)
	w, _ := e.runParallel(fmt.Sprintf("raw pwrite %d B", len(value)), n, clients, 1, func(i int) error {
		fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if _, err := unix.Pwrite(fd, value, int64(i)*stride); err != nil {
			return err
		}
		if fsync {
			return unix.Fdatasync(fd)
		}
		return nil
	})
	r, _ := e.runParallel(fmt.Sprintf("raw pread %d B", len(value)), n, clients, 1, func(i int) error {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		buf := make([]byte, len(value))
		_, err = unix.Pread(fd, buf, int64(i)*stride)
		return err
	})
	return w, r, nil
}

// DFSChurn compares the space efficiency of the shard and bucket
// allocators under churn, in process (the allocators are pure): every
// round puts objects of mixed sizes (log-uniform 1 KiB..1 MiB) and
// removes about as many random live ones, with eviction (and, for buckets,
// the leader's file deletions) as the cluster runs them. Efficiency is
// live value bytes ÷ bytes the allocator's files occupy on disk
// (preallocated: every file counts at full capacity), and ÷ bytes the
// allocator holds (live + tombstoned/deferred).
//
// It runs o.Rounds rounds of o.PerRound puts in o.Space, keeping o.Live
// of it live.
func DFSChurn(out io.Writer, o ChurnOptions) error {
	space := o.Space.Bytes
	for _, kind := range []string{dfsalloc.KindShard, dfsalloc.KindBucket} {
		cfg := dfsalloc.DefaultConfig()
		cfg.Allocator = kind
		cfg.ShardCount = 16
		cfg.ShardCapacity = space / 16 &^ 4095
		cfg.BucketCapacity = 64 << 20
		cfg.MaxBucketCount = int(space / cfg.BucketCapacity)
		cfg.DeferredFreeSeconds = 5
		a, err := dfsalloc.New(cfg)
		if err != nil {
			return err
		}
		rng := mrand.New(mrand.NewPCG(1, 2))
		type obj struct {
			key  string
			desc api.DFSDescriptor
		}
		var live []obj
		var liveBytes int64
		failed, evictedObjs := 0, 0
		now := int64(1e18)
		for r := 0; r < o.Rounds; r++ {
			now += int64(time.Second)
			for i := 0; i < o.PerRound; i++ {
				key := fmt.Sprintf("k%d-%d", r, i)
				size := int64(math.Exp(rng.Float64()*math.Log(1024)) * 1024)
				ds, err := a.Allocate([]dfsalloc.Request{{Key: key, Size: size}}, now)
				if err != nil {
					failed++
					continue
				}
				_ = a.Commit(key, ds[0], now)
				live = append(live, obj{key, ds[0]})
				liveBytes += size
			}
			// Random removals keep the live set at the target.
			for float64(liveBytes) > o.Live*float64(space) && len(live) > 0 {
				{
					j := rng.IntN(len(live))
					o := live[j]
					_ = a.Free(o.key, o.desc, now)
					liveBytes -= o.desc.Size
					live[j] = live[len(live)-1]
					live = live[:len(live)-1]
				}
			}
			plan := a.PlanEviction(now, nil)
			evicted, _ := a.ApplyEviction(plan, now, nil)
			if len(evicted) > 0 {
				gone := map[string]bool{}
				evictedObjs += len(evicted)
				for _, e := range evicted {
					gone[e.Key] = true
					liveBytes -= e.Desc.Size
				}
				kept := live[:0]
				for _, o := range live {
					if !gone[o.key] {
						kept = append(kept, o)
					}
				}
				live = kept
			}
			for _, op := range a.PendingFileOps() {
				switch {
				case op.Kind == dfsalloc.FileCreate:
					_ = a.ConfirmFileCreated(op.Unit)
				case op.Kind == dfsalloc.FileDelete && now >= op.NotBefore:
					_ = a.ConfirmFileDeleted(op.Unit)
				}
			}
		}
		st := a.Stats()
		var onDisk int64
		for _, u := range st.Units {
			if u.File == dfsalloc.FileReady {
				onDisk += u.Capacity
			}
		}
		fmt.Fprintf(out, "churn %-6s: %d rounds x %d puts, space %s: live %d MiB in %d objects; files on disk %d MiB -> %.1f%% efficient; allocator holds %d MiB (live+dead) -> %.1f%%; %d puts refused (NO_SPACE), %d live objects evicted\n",
			kind, o.Rounds, o.PerRound, o.Space.Text, liveBytes>>20, len(live), onDisk>>20, 100*float64(liveBytes)/float64(max(onDisk, 1)),
			(st.LiveBytes+st.DeadBytes)>>20, 100*float64(liveBytes)/float64(max(st.LiveBytes+st.DeadBytes, 1)), failed, evictedObjs)
	}
	return nil
}

// ChurnOptions are bench dfs-churn's settings.
type ChurnOptions struct {
	Rounds, PerRound int
	Space            Size
	Live             float64
}
