package main

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/hashicorp/go-hclog"

	"sexton/holder"
	"sexton/internal/cliflag"
	"sexton/internal/secret"
	"sexton/jsonout"
)

func runHolder(args []string) error {
	fs := newFlags("holder")
	masters := fs.String("masters", cliflag.EnvString("SEXTON_MASTERS", "127.0.0.1:7101"), "master RPC addresses A,B,C (env SEXTON_MASTERS)")
	dir := fs.String("dir", cliflag.EnvString("SEXTON_HOLDER_DIR", ""), "LOCAL_DISK directory (env SEXTON_HOLDER_DIR)")
	addr := fs.String("rpc-addr", cliflag.EnvString("SEXTON_HOLDER_RPC_ADDR", "127.0.0.1:7301"), "data RPC address (env SEXTON_HOLDER_RPC_ADDR)")
	httpAddr := fs.String("http-addr", cliflag.EnvString("SEXTON_HOLDER_HTTP_ADDR", ""), "HTTP address for /metrics, /healthz, /readyz; empty = off (env SEXTON_HOLDER_HTTP_ADDR)")
	advertise := fs.String("advertise", cliflag.EnvString("SEXTON_HOLDER_ADVERTISE", ""), cliflag.EnvUsage("SEXTON_HOLDER_ADVERTISE", "data RPC address given to clients (default: --rpc-addr)"))
	pool := fs.String("pool", cliflag.EnvString("SEXTON_HOLDER_POOL", "default"), "pool name (env SEXTON_HOLDER_POOL)")
	capacity := fs.String("capacity", cliflag.EnvString("SEXTON_HOLDER_CAPACITY", "0"), "bytes this holder may use, plain or with a unit such as 4GiB (env SEXTON_HOLDER_CAPACITY)")
	metaReserve := fs.String("metadata-reserve", cliflag.EnvString(holder.EnvMetadataReserve, "auto"), "space kept for tombstones and GC metadata: puts are refused while less is free, and a file of this size (.space_reserve) is preallocated and released when a deletion meets a full disk; bytes with an optional unit, auto (sized from the bucket keys limit) or 0 to turn it off (env "+holder.EnvMetadataReserve+")")
	clientID := fs.String("client-id", cliflag.EnvString("SEXTON_HOLDER_CLIENT_ID", ""), cliflag.EnvUsage("SEXTON_HOLDER_CLIENT_ID", "client id (default: derived from the segment id)"))
	token := fs.String("cluster-token", cliflag.EnvString("SEXTON_CLUSTER_TOKEN", ""), "the token this holder proves to the masters (their --holder-token, or their --cluster-token without role tokens); on the data port it proves the operator role; at least 32 bytes, sexton operator token generate makes one; of a comma-separated list the holder proves the first and its data port accepts each (env SEXTON_CLUSTER_TOKEN)")
	var clientToken, operatorToken string
	roleTokenFlag(fs, &clientToken, "client", "data port")
	roleTokenFlag(fs, &operatorToken, "operator", "data port")
	logLevel := fs.String("log-level", cliflag.EnvString("SEXTON_LOG_LEVEL", "info"), cliflag.EnvUsage("SEXTON_LOG_LEVEL", "log level"))
	stls := addServerTLS(fs)
	// The GC settings come from MOONCAKE_OFFLOAD_* first; a bad variable
	// refuses to start rather than fall back to a default.
	gcEnv, err := holder.GCOptionsFromEnv()
	if err != nil {
		return err
	}
	gcOn := fs.Bool("gc", gcEnv.Enabled, "run the bucket GC (env "+holder.EnvGCEnable+")")
	gcInterval := fs.String("gc-interval", gcEnv.Interval.String(), "GC wake interval, seconds or a duration like 10s (env "+holder.EnvGCIntervalSeconds+")")
	gcRatio := fs.Float64("gc-deleted-ratio", gcEnv.DeletedRatio, "dead-byte ratio at which a bucket is collected, (0,1] (env "+holder.EnvGCDeletedRatio+")")
	gcHigh := fs.Float64("gc-high-watermark", gcEnv.HighWatermark, "disk usage ratio that starts reclaim and eviction, (0,1] (env "+holder.EnvGCHighWatermark+")")
	gcPolicy := fs.String("gc-policy", cliflag.EnvString("SEXTON_HOLDER_GC_POLICY", "age-aware"), cliflag.EnvUsage("SEXTON_HOLDER_GC_POLICY", "GC victim choice: age-aware (cost-benefit) or greedy (highest dead ratio first)"))
	gcLow := fs.Float64("gc-low-watermark", gcEnv.LowWatermark, "disk usage ratio reclaim stops at, below the high watermark (env "+holder.EnvGCLowWatermark+")")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" {
		return usagef("holder: --dir is required")
	}
	tlsSrc, tlsRequire, securityWarning, err := stls.resolve("holder data port", secret.FlagToken{Flag: "--cluster-token", Token: *token},
		secret.FlagToken{Flag: "--client-token", Token: clientToken}, secret.FlagToken{Flag: "--operator-token", Token: operatorToken})
	if err != nil {
		return err
	}
	capBytes, err := cliflag.ParseSize(*capacity)
	if err != nil {
		return fmt.Errorf("--capacity: %w", err)
	}
	reserve := int64(-1) // auto
	if strings.TrimSpace(*metaReserve) != "auto" {
		if reserve, err = cliflag.ParseSize(*metaReserve); err != nil {
			return fmt.Errorf("--metadata-reserve: %w", err)
		}
	}
	gcOpts, err := gcOptionsFromFlags(gcEnv, *gcOn, *gcInterval, *gcRatio, *gcHigh, *gcLow, capBytes)
	if err != nil {
		return err
	}
	switch *gcPolicy {
	case "age-aware":
		gcOpts.AgeAware = true
	case "greedy":
		gcOpts.AgeAware = false
	default:
		return fmt.Errorf("--gc-policy %q: want age-aware or greedy", *gcPolicy)
	}
	level := hclog.LevelFromString(*logLevel)
	if level == hclog.NoLevel {
		return fmt.Errorf("--log-level %q: want trace, debug, info, warn or error", *logLevel)
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "holder", Level: level, Output: os.Stderr}).With("holder", *clientID)
	logBuild(logger, "holder")
	if securityWarning != "" {
		logger.Warn(securityWarning)
	}
	sd := holder.StartNotify(*dir, notifyError)
	defer sd.Stop()
	svc, store, err := holder.Start(*dir, holder.ServiceConfig{Masters: cliflag.SplitList(*masters), ClusterToken: *token, ClientToken: clientToken, OperatorToken: operatorToken, ListenAddr: *addr, HTTPAddr: *httpAddr,
		Advertise: *advertise, ClientID: *clientID, Pool: *pool, Capacity: capBytes, Logger: logger,
		TLS: tlsSrc, TLSRequireClientCert: tlsRequire}, gcOpts, reserve)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "sexton holder: segment %s in %s, data rpc %s\n", store.SegmentID(), *dir, svc.Addr())
	if a := svc.HTTPAddr(); a != "" {
		fmt.Fprintf(os.Stderr, "sexton holder: http %s (/metrics, /healthz, /readyz)\n", a)
	}
	sd.Started(svc)
	serveSignals(svc.ReloadTLS)
	sd.Stop()
	svc.Close()
	return store.Close()
}

func runHolderInspect(e *env, args []string) error {
	rep, err := holder.Inspect(args[0])
	if err != nil {
		return fmt.Errorf("inspect %s: %w", args[0], err)
	}
	if err := e.output(jsonout.InspectOf(rep), func() error { return printInspect(rep) }); err != nil {
		return err
	}
	if len(rep.Problems) > 0 {
		return fmt.Errorf("inspect %s: %d problems; the holder would refuse to open it", rep.Dir, len(rep.Problems))
	}
	return nil
}

func printInspect(rep holder.InspectReport) error {
	id := rep.Identity
	fmt.Printf("dir:        %s\nmarked:     %v\nsegment:    %s\ncluster:    %016x\nbuckets:    %d\nlive:       %d objects, %d bytes\ntombstoned: %d objects, %d bytes\nused:       %d bytes on disk\nfloor:      %d keys (tombstoned incarnations refused after GC)\ngc intent:  %v\n",
		rep.Dir, rep.Marked, id.SegmentID, id.ClusterID, len(rep.Buckets), rep.LiveObjects, rep.LiveBytes, rep.TombstonedObjects, rep.DeadBytes, rep.UsedBytes, rep.FloorEntries, rep.GCIntentPending)
	if rep.GCIntent != "" {
		fmt.Printf("gc round:   %s (resolved at next open)\n", rep.GCIntent)
	}
	if rep.SpaceReserveHeld {
		fmt.Printf("reserve:    held, %d bytes (%s)\n", rep.SpaceReserveBytes, holder.SpaceReserveFileName)
	} else {
		fmt.Printf("reserve:    not held (released on a full disk, recreated once space is back; or --metadata-reserve 0)\n")
	}
	fmt.Printf("filesystem: %d bytes free of %d\n", rep.FSFreeBytes, rep.FSTotalBytes)
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BUCKET\tDATA\tLIVE\tDEAD\tDEAD RATIO\tLIVE N\tDEAD N\tOPEN")
	for _, b := range rep.Buckets {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%.2f\t%d\t%d\t%v\n", b.ID, b.DataSize, b.LiveBytes, b.DeadBytes, b.DeadRatio(), b.LiveCount, b.DeadCount, b.Open)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range rep.Problems {
		fmt.Printf("problem: %s\n", p)
	}
	for _, f := range rep.StaleMetas {
		fmt.Printf("stale meta (removed at next open): %s\n", f)
	}
	for _, f := range rep.OrphanBuckets {
		fmt.Printf("orphan bucket (removed at next open): %s\n", f)
	}
	return nil
}

// gcOptionsFromFlags applies the --gc* flags over the environment's GC
// settings; a bad value is an error naming its flag.
func gcOptionsFromFlags(base holder.GCOptions, on bool, interval string, ratio, high, low float64, capacity int64) (holder.GCOptions, error) {
	o := base
	o.Enabled, o.DeletedRatio, o.HighWatermark, o.LowWatermark, o.Capacity = on, ratio, high, low, capacity
	var err error
	if o.Interval, err = cliflag.ParseSeconds(interval); err != nil {
		return o, fmt.Errorf("--gc-interval %q: not seconds or a duration", interval)
	}
	for _, r := range []struct {
		flag string
		v    float64
	}{{"--gc-deleted-ratio", ratio}, {"--gc-high-watermark", high}, {"--gc-low-watermark", low}} {
		if !(r.v > 0 && r.v <= 1) {
			return o, fmt.Errorf("%s %v: must be in (0, 1]", r.flag, r.v)
		}
	}
	if low >= high {
		return o, fmt.Errorf("--gc-low-watermark %v must be below --gc-high-watermark %v", low, high)
	}
	if err := o.Validate(); err != nil {
		return o, fmt.Errorf("--gc-interval %q: %w", interval, err)
	}
	return o, nil
}
