// Package bench runs the `sexton bench` workloads against a cluster and
// reports what they measured: rates and latency percentiles of puts, gets
// and removes, deletion convergence, the holders a process simulates
// (mount, heartbeat, long-poll fetch, ack, with no disk behind them), the
// masters' and holders' own figures read from their /metrics (Raft commit
// parts, fsync times, RSS, heap, CPU), this process's CPU from getrusage,
// DFS allocator churn in process and bare hashicorp/raft applies.
//
// The command line (cmd/sexton) keeps each verb's flags and hands the
// parsed values to a function here with an Env: the clients, the
// timeout and where the report goes. The report's format is the
// command's output (docs/CLI.md); options refused before anything is
// done come back as a UsageError. Only the command line imports this
// package (internal/layering puts it above the nodes and below the
// composition roots).
package bench
