package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"sexton/api"
	"sexton/bench"
	"sexton/internal/cliflag"
)

// The bench verbs: their flags, and the call into package bench, which
// runs the workload and prints its report to stdout.

// benchEnv is what package bench runs with: this verb's cluster flags,
// clients and output.
func (e *env) benchEnv() *bench.Env {
	return &bench.Env{
		Masters: cliflag.SplitList(e.masters),
		TLS: func() (*tls.Config, error) {
			cc, err := e.clientConfig()
			return cc.TLS, err
		},
		Timeout:   e.timeout,
		Client:    e.client,
		NewClient: e.newClient,
		Out:       os.Stdout,
		Err:       os.Stderr,
		Progress: func(what string, total int64, unit string) bench.Progress {
			return progressTo.New(what, total, unit)
		},
	}
}

// benchErr reports a bench's refusal of its options as a usage error.
func benchErr(err error) error {
	var u bench.UsageError
	if errors.As(err, &u) {
		return usageError{msg: u.Msg}
	}
	return err
}

// masterHTTPFlag registers --master-http: the RPC addresses say nothing of
// the masters' HTTP ports, so a bench that reads /metrics is told them.
func masterHTTPFlag(fs *flag.FlagSet) *string {
	return fs.String("master-http", cliflag.EnvString("SEXTON_MASTER_HTTP", ""),
		"the masters' HTTP addresses A,B,C (their --http-addr), to read their own figures from /metrics (RSS, heap, CPU; for bench remove, where its commits went); empty: not read (env SEXTON_MASTER_HTTP)")
}

func setupBenchRemove(fs *flag.FlagSet) runFunc {
	keys := fs.Int("keys", 10000, "keys to create and remove")
	batch := fs.Int("batch", 1, "keys per BatchRemove (1 = Remove)")
	clients := fs.Int("clients", 1, "concurrent clients")
	drain := fs.Bool("drain", false, "ack the delete tasks while timing (as a holder would); otherwise they are acked after, and that drain is timed too")
	sessions := fs.Bool("sessions", true, "send removes with a client session (exactly once); false sends them bare, to measure what a session costs")
	masterHTTP := masterHTTPFlag(fs)
	return func(e *env, _ []string) error {
		return benchErr(bench.Remove(e.benchEnv(), bench.RemoveOptions{Keys: *keys, Batch: *batch, Clients: *clients,
			Drain: *drain, Sessions: *sessions, MasterHTTP: cliflag.SplitList(*masterHTTP)}))
	}
}

func setupBenchPutGet(get bool) func(*flag.FlagSet) runFunc {
	return func(fs *flag.FlagSet) runFunc {
		n := fs.Int("n", 2000, "objects")
		size := fs.String("size", "4KiB", "value size")
		clients := fs.Int("clients", 16, "concurrent clients")
		replicas := fs.Int("replicas", 1, "replicas per object")
		return func(e *env, _ []string) error {
			sz, err := bench.ParseSize(*size)
			if err != nil {
				return err
			}
			return benchErr(bench.PutGet(e.benchEnv(), bench.PutGetOptions{Get: get, N: *n, Size: sz, Clients: *clients, Replicas: *replicas}))
		}
	}
}

// setupBenchConverge: deletion convergence on real holders (bench.Converge).
func setupBenchConverge(fs *flag.FlagSet) runFunc {
	n := fs.Int("n", 200, "objects to put and remove")
	return func(e *env, _ []string) error { return benchErr(bench.Converge(e.benchEnv(), *n)) }
}

func setupBenchPut(fs *flag.FlagSet) runFunc {
	n := fs.Int("n", 2000, "objects")
	size := fs.String("size", "4KiB", "value size")
	clients := fs.Int("clients", 16, "concurrent clients")
	replicas := fs.Int("replicas", 1, "replicas per object")
	masterHTTP := masterHTTPFlag(fs)
	holderHTTP := fs.String("holder-http", cliflag.EnvString("SEXTON_HOLDER_HTTP", ""),
		"the holders' HTTP addresses A,B (their --http-addr), to read their fsync times and CPU from /metrics; empty: not read (env SEXTON_HOLDER_HTTP)")
	return func(e *env, _ []string) error {
		sz, err := bench.ParseSize(*size)
		if err != nil {
			return err
		}
		return benchErr(bench.Put(e.benchEnv(), bench.PutOptions{N: *n, Size: sz, Clients: *clients, Replicas: *replicas,
			MasterHTTP: cliflag.SplitList(*masterHTTP), HolderHTTP: cliflag.SplitList(*holderHTTP)}))
	}
}

func setupBenchLoad(fs *flag.FlagSet) runFunc {
	var o bench.LoadOptions
	fs.IntVar(&o.Objects, "objects", 100000, "objects to create")
	fs.IntVar(&o.Clients, "clients", 16, "batches in flight at once")
	fs.IntVar(&o.Batch, "batch", api.MaxBatchPutItems, fmt.Sprintf("objects per BatchPutStart and BatchPutEnd (1..%d)", api.MaxBatchPutItems))
	fs.IntVar(&o.Segments, "segments", 8, "simulated holders the objects are placed on")
	fs.StringVar(&o.Prefix, "prefix", "", "key prefix; keys are PREFIX plus a 10-digit index (default load/RUNID/, new each run: a reused prefix fails with OBJECT_ALREADY_EXISTS, never overwrites)")
	size := fs.String("size", "4KiB", "size each object claims (no bytes are written)")
	masterHTTP := masterHTTPFlag(fs)
	return func(e *env, _ []string) error {
		sz, err := cliflag.ParseSize(*size)
		if err != nil {
			return usagef("--size: %v", err)
		}
		o.Size, o.MasterHTTP = sz, cliflag.SplitList(*masterHTTP)
		return benchErr(bench.Load(e.benchEnv(), o))
	}
}

func setupBenchHolders(fs *flag.FlagSet) runFunc {
	var o bench.HoldersOptions
	fs.IntVar(&o.N, "n", 1000, "simulated holders, each with its own client and connection, as real holders have")
	fs.DurationVar(&o.Duration, "duration", 30*time.Second, "how long to put and remove for")
	fs.Float64Var(&o.Rate, "removes-per-sec", 100, "Removes per second, of objects put for them (metadata only) and spread over the holders by placement")
	fs.StringVar(&o.Prefix, "prefix", "", "key prefix (default holders/RUNID/, new each run)")
	masterHTTP := masterHTTPFlag(fs)
	return func(e *env, _ []string) error {
		o.MasterHTTP = cliflag.SplitList(*masterHTTP)
		return benchErr(bench.Holders(e.benchEnv(), o))
	}
}

// setupBenchDFS: DFS allocations per second and DFS put/get throughput
// next to raw pwrite/pread (bench.DFS).
func setupBenchDFS(fs *flag.FlagSet) runFunc {
	var o bench.DFSOptions
	fs.IntVar(&o.N, "n", 2000, "allocations per allocation phase")
	fs.IntVar(&o.IONum, "io-n", 200, "objects per size in the I/O phase")
	sizes := fs.String("sizes", "64KiB,1MiB", "value sizes of the I/O phase")
	fs.IntVar(&o.Clients, "clients", 4, "concurrent clients in the I/O phase")
	fs.IntVar(&o.Batch, "batch", 0, "also allocate in batches of this many objects (BatchPutStart/BatchPutEnd, one Raft entry each); 0 skips the phase")
	return func(e *env, _ []string) error {
		o.Sizes = nil
		for _, s := range strings.Split(*sizes, ",") {
			sz, err := bench.ParseSize(s)
			if err != nil {
				return err
			}
			o.Sizes = append(o.Sizes, sz)
		}
		return benchErr(bench.DFS(e.benchEnv(), o))
	}
}

// benchDFSChurn: the shard and bucket allocators' space efficiency under
// churn, in process (bench.DFSChurn).
func benchDFSChurn(args []string) error {
	fs := newFlags("bench dfs-churn")
	rounds := fs.Int("rounds", 200, "rounds of put/remove")
	perRound := fs.Int("per-round", 200, "puts per round")
	total := fs.String("space", "2GiB", "DFS space of either allocator")
	target := fs.Float64("live", 0.6, "live bytes kept, as a fraction of the space (random removals beyond it)")
	if err := parseFlags(fs, args); err != nil {
		return usagef("%v", err)
	}
	space, err := bench.ParseSize(*total)
	if err != nil {
		return err
	}
	return bench.DFSChurn(os.Stdout, bench.ChurnOptions{Rounds: *rounds, PerRound: *perRound, Space: space, Live: *target})
}

// benchRaft: bare hashicorp/raft applies on three local nodes laid out
// like sexton's (bench.Raft).
func benchRaft(args []string) error {
	fs := newFlags("bench raft")
	n := fs.Int("n", 5000, "entries")
	clients := fs.Int("clients", 1, "concurrent proposers")
	size := fs.Int("size", 64, "entry size in bytes")
	store := fs.String("raft-log-store", "", "boltdb or wal; unset, what a master picks for a new data dir (wal)")
	inProcess := fs.Bool("in-process", false, "run all three nodes in this process instead of one process each")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return bench.Raft(&bench.Env{Out: os.Stdout, Err: os.Stderr},
		bench.RaftOptions{N: *n, Clients: *clients, Size: *size, Store: *store, InProcess: *inProcess})
}

// benchRaftNode is one follower of `bench raft`, in its own process; it
// runs until its stdin closes.
func benchRaftNode(args []string) error {
	fs := newFlags("bench raft-node")
	id := fs.String("id", "", "node id")
	dir := fs.String("dir", "", "data dir")
	addr := fs.String("raft-addr", "", "raft address")
	peers := fs.String("peers", "", "ID=ADDR,...")
	store := fs.String("raft-log-store", "", "boltdb or wal; unset, what a master picks for a new data dir (wal)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return bench.RaftNode(bench.RaftNodeOptions{ID: *id, Dir: *dir, Addr: *addr, Peers: *peers, Store: *store}, os.Stdin)
}
