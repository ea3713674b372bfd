package main

import "flag"

// A verb is one command of the binary. The table below is the only list
// of them: dispatch, the top-level usage, each group's usage and each
// verb's --help are made from it.
//
// To add a verb, add a row and a setup function that registers the verb's
// own flags and returns its run function. Each flag gets the environment
// variable SEXTON_<VERB>_<FLAG> by itself (flags.go, bindEnv) unless its
// usage names one (cliflag.EnvUsage) that its definition reads;
// completion (completion.go) picks up the verb and its flags from the
// table. A verb that talks to the cluster takes clusterFlags and calls
// e.client() (or e.call for a plain master RPC); what it does beyond
// asking and printing belongs in the package that owns it (client,
// rebuild, bench, ...). One with --json prints through e.output with a
// snake_case output struct of package jsonout when the api type has no
// json tags. Then give it a section in docs/CLI.md (TestCLIDoc says what
// is missing; its help block is written by -update-cli-doc) and, with
// --json, a case in TestJSONOutputOfEveryVerb.
type verb struct {
	path    string // the words after "sexton", e.g. "operator snapshot save"
	args    string // synopsis of the positional arguments, e.g. "FILE"
	summary string // one line
	detail  string // more for --help only: what the summary has no room for (a definition); may be empty
	group   string // heading in the usage: one of groups
	takes   shared // which shared flags the verb takes
	nargs   argc   // how many positional arguments it accepts
	// setup registers the verb's own flags on fs and returns what runs
	// it, after the flags are parsed, with the positional arguments.
	setup func(fs *flag.FlagSet) runFunc
	// run, instead of setup, runs a verb that has no flags of its own.
	run runFunc
	// raw, instead of setup, is handed the arguments untouched: servers
	// and tools with their own flag handling. It makes its FlagSet with
	// newFlags(path), so --help still shows its flags.
	raw func(args []string) error
}

// runFunc runs a verb; e holds the shared flags and the lazily opened client.
type runFunc func(e *env, args []string) error

// shared names the flags parsed in one place for every verb that takes them.
type shared uint8

const (
	clusterFlags shared = 1 << iota // --masters, --cluster-token, --timeout, --tls-*
	jsonFlag                        // --json
)

// argc bounds a verb's positional arguments; max < 0 is unbounded.
type argc struct{ min, max int }

// The common counts; the zero argc takes none.
var (
	one  = argc{1, 1}
	many = argc{0, -1}
)

// groups orders the usage's headings.
var groups = []string{"servers", "client", "operator", "measure", "debug"}

// verbs is filled in init: its entries refer to functions that look
// verbs up again (newFlags, for --help), which a package-level
// initializer may not.
var verbs []verb

func init() {
	verbs = []verb{
		{path: "master", summary: "run a master node (one-node cluster in ./sexton-data by default)", group: "servers", raw: runMaster},
		{path: "holder", summary: "run a LOCAL_DISK holder on --dir", group: "servers", raw: runHolder},
		{path: "holder inspect", args: "DIR", summary: "read a holder directory offline (buckets, bytes, GC intent)", group: "servers", takes: jsonFlag, nargs: one, run: runHolderInspect},
		{path: "dev", summary: "a one-node master and one holder in a temporary directory", group: "servers", raw: runDev},

		{path: "put", args: "KEY [FILE|-]", summary: "store a value (--dfs-replicas 1: below MOONCAKE_DFS_ROOT_DIR)", group: "client", takes: clusterFlags | jsonFlag, nargs: argc{1, 2}, setup: setupPut},
		{path: "get", args: "KEY", summary: "read a value", group: "client", takes: clusterFlags, nargs: one, setup: setupGet},
		{path: "rm", args: "KEY... | --batch FILE|- | --if-incarnation INC KEY | --prefix P | --all --yes-delete-everything", summary: "remove keys", group: "client", takes: clusterFlags | jsonFlag, nargs: many, setup: setupRm},
		{path: "stat", args: "KEY", summary: "show an object, its pending put and deletes", group: "client", takes: clusterFlags | jsonFlag, nargs: one, run: runStat},
		{path: "ls", args: "[PREFIX]", summary: "list objects", group: "client", takes: clusterFlags | jsonFlag, nargs: argc{0, 1}, setup: setupLs},
		{path: "status", summary: "show every master's view of the cluster", group: "client", takes: clusterFlags | jsonFlag, run: runStatus},
		{path: "completion", args: "bash|zsh", summary: "print a shell completion script for bash or zsh, made from the verb table", group: "client", nargs: one, run: runCompletion},
		{path: "version", summary: "show this binary's version, commit, Go version and build date (also --version)", group: "client", takes: jsonFlag, run: runVersion},

		{path: "operator raft list-peers", summary: "list the Raft configuration", group: "operator", takes: clusterFlags | jsonFlag, run: runRaftListPeers},
		{path: "operator raft add-voter", args: "ID RAFT_ADDR", summary: "add a voter", group: "operator", takes: clusterFlags, nargs: argc{2, 2}, run: runRaftAddVoter},
		{path: "operator raft remove-peer", args: "ID", summary: "remove a peer", group: "operator", takes: clusterFlags, nargs: one, run: runRaftRemovePeer},
		{path: "operator raft transfer-leader", args: "[ID]", summary: "hand leadership to ID (any other voter if none)", group: "operator", takes: clusterFlags, nargs: argc{0, 1}, run: runRaftTransfer},
		{path: "operator raft migrate-log-store", args: "--data-dir DIR --to wal|boltdb", summary: "move a stopped master's Raft log to the other log store, keeping the old one aside", group: "operator", setup: setupRaftMigrateLogStore},
		{path: "operator snapshot save", args: "FILE", summary: "save the leader's state to FILE", group: "operator", takes: clusterFlags, nargs: one, run: runSnapshotSave},
		{path: "operator snapshot restore", args: "FILE", summary: "replace the cluster's state with FILE", group: "operator", takes: clusterFlags, nargs: one, setup: setupSnapshotRestore},
		// inspect reads a file only; it keeps accepting the cluster flags it always did.
		{path: "operator snapshot inspect", args: "FILE", summary: "show a snapshot file's header and counts", group: "operator", takes: clusterFlags | jsonFlag, nargs: one, run: runSnapshotInspect},
		{path: "operator tasks", summary: "list pending local-delete tasks", group: "operator", takes: clusterFlags | jsonFlag, setup: setupTasks},
		{path: "operator segments", summary: "list the segments the master knows", group: "operator", takes: clusterFlags | jsonFlag, run: runSegments},
		{path: "operator fsck", summary: "compare the leader's metadata with every holder's scan", group: "operator", takes: clusterFlags | jsonFlag, run: runFsck},
		{path: "operator rebuild", summary: "rebuild a fresh cluster's object table from the lost cluster's holders", group: "operator", takes: clusterFlags | jsonFlag, setup: setupRebuild},
		{path: "operator retire", args: "SEGMENT --by WHO --reason WHY", summary: "retire a lost segment, dropping its pending tasks", group: "operator", takes: clusterFlags, nargs: one, setup: setupRetire},
		{path: "operator dfs status", summary: "show the DFS allocator: units, usage, pending deletions", group: "operator", takes: clusterFlags | jsonFlag, run: runDFSStatus},
		{path: "operator dfs set-max-buckets", args: "N", summary: "change the bucket allocator's maximum", group: "operator", takes: clusterFlags, nargs: one, run: runDFSSetMaxBuckets},
		{path: "operator settings", args: "[show]", summary: "show the replicated settings", group: "operator", takes: clusterFlags | jsonFlag, nargs: argc{0, 1}, run: runSettingsShow},
		{path: "operator jobs", summary: "list bulk-delete jobs (rm --prefix) and their progress", group: "operator", takes: clusterFlags | jsonFlag, run: runJobs},
		{path: "operator jobs cancel", args: "ID", summary: "cancel a bulk-delete job (what it removed stays removed)", group: "operator", takes: clusterFlags, nargs: one, run: runJobsCancel},
		{path: "operator settings set", summary: "change the replicated settings named", group: "operator", takes: clusterFlags | jsonFlag, setup: setupSettingsSet},
		{path: "operator token generate", summary: "print a new random cluster token (256 bits, base64url)", group: "operator", takes: jsonFlag, run: runTokenGenerate},
		{path: "tls ca", args: "--dir DIR", summary: "make a cluster CA: DIR/ca.crt and DIR/ca.key (ECDSA P-256, 10 years)", group: "operator", setup: setupTLSCA},
		{path: "tls cert", args: "--dir DIR --role ROLE --name NAME", summary: "issue DIR/ROLE-NAME.crt/.key from the CA in DIR, naming sexton://ROLE/NAME", group: "operator", setup: setupTLSCert,
			detail: "ROLE is master, holder (server and client usage; give --dns and/or --ip: every host and\naddress it is dialed by) or client, operator (client usage). A master's NAME is its --id."},

		{path: "bench remove", summary: "Remove/BatchRemove rate and latency on a bench segment", group: "measure", takes: clusterFlags, setup: setupBenchRemove},
		{path: "bench put", summary: "put throughput and latency, and a put's critical path in parts", group: "measure", takes: clusterFlags, setup: setupBenchPut,
			detail: "A put's mean latency is split into its master round trips and holder writes (as the client\nsees them), the holders' fsyncs (--holder-http), the Raft commit (--master-http) and the\nclient's own time; CPU per put of this process, the masters and the holders. docs/CLI.md."},
		{path: "bench get", summary: "put, then get throughput and latency", group: "measure", takes: clusterFlags, setup: setupBenchPutGet(true)},
		{path: "bench converge", summary: "time from Remove OK to the holder's ack committed", group: "measure", takes: clusterFlags, setup: setupBenchConverge},
		{path: "bench load", summary: "fill the cluster with N objects (batched, metadata only); objects/s and masters' memory", group: "measure", takes: clusterFlags, setup: setupBenchLoad,
			detail: "Objects go onto simulated holders this process mounts (segments bench-sim-NNNNN, pool\nsexton-bench) and are left in place; no bytes are written anywhere. docs/CLI.md."},
		{path: "bench holders", summary: "N simulated holders: leader CPU, heartbeat RTT, deletion convergence", group: "measure", takes: clusterFlags, setup: setupBenchHolders,
			detail: "Deletion convergence is the time from a Remove's answer (OK) reaching the bench to the\nanswer of the holder's AckLocalDeleteTasks carrying that key's task, which the leader gives\nonce the ack is committed and applied (an ack answered first counts 0). docs/CLI.md."},
		{path: "bench dfs", summary: "DFS allocations/s; DFS put/get MB/s vs raw pwrite/pread", group: "measure", takes: clusterFlags, setup: setupBenchDFS},
		{path: "bench dfs-churn", summary: "shard vs bucket allocator space efficiency under churn", group: "measure", raw: benchDFSChurn},
		{path: "bench raft", summary: "bare hashicorp/raft applies on three local nodes", group: "measure", raw: benchRaft},
		{path: "bench raft-node", summary: "one follower of bench raft (bench raft starts it)", group: "measure", raw: benchRaftNode},

		{path: "debug crash-points", summary: "list every SEXTON_CRASH_AT name in this binary", group: "debug", run: runCrashPoints},
		{path: "debug raft-append", args: "--data-dir DIR --hex BYTES", summary: "append one raw entry to a stopped master's Raft log", group: "debug", raw: debugRaftAppend},
	}
}
