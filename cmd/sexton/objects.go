package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"sexton/api"
	"sexton/client"
	"sexton/transport"
)

func runPut(args []string) error {
	var cf clientFlags
	fs := newFlags("put")
	cf.register(fs, false)
	replicas := fs.Int("replicas", 1, "LOCAL_DISK replicas (0 when only --dfs-replicas is given)")
	dfsReplicas := fs.Int("dfs-replicas", 0, "DFS replicas (0 or 1); the value is written with pwrite below MOONCAKE_DFS_ROOT_DIR")
	tenant := fs.String("tenant", "", "tenant")
	ifAbsent := fs.Bool("if-absent", false, "fail with OBJECT_ALREADY_EXISTS instead of overwriting")
	if err := parseFlags(fs, args); err != nil {
		return usagef("%v", err)
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return usagef("put KEY [FILE|-]")
	}
	replicasSet := false
	fs.Visit(func(f *flag.Flag) { replicasSet = replicasSet || f.Name == "replicas" })
	if *dfsReplicas > 0 && !replicasSet {
		*replicas = 0
	}
	key := fs.Arg(0)
	var value []byte
	var err error
	if fs.NArg() == 1 || fs.Arg(1) == "-" {
		value, err = io.ReadAll(io.LimitReader(os.Stdin, dataMaxFrame))
	} else {
		value, err = os.ReadFile(fs.Arg(1))
	}
	if err != nil {
		return fmt.Errorf("put %s: read value: %w", key, err)
	}
	cl, err := cf.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	inc, err := cl.Put(context.Background(), key, value, client.PutOptions{Tenant: *tenant, Replicas: *replicas,
		DFSReplicas: *dfsReplicas, IfAbsent: *ifAbsent})
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	fmt.Printf("put %s: %d bytes, incarnation %s\n", key, len(value), inc)
	return nil
}

func runGet(args []string) error {
	var cf clientFlags
	fs := newFlags("get")
	cf.register(fs, false)
	out := fs.String("o", "", "write the value to this file instead of stdout")
	key, err := parseWithKey(fs, args, "get KEY [-o FILE]")
	if err != nil {
		return err
	}
	cl, err := cf.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	value, _, err := cl.Get(context.Background(), key)
	if err != nil {
		return fmt.Errorf("get %s: %w", key, err)
	}
	if *out != "" {
		return os.WriteFile(*out, value, 0o644)
	}
	_, err = os.Stdout.Write(value)
	return err
}

// parseWithKey parses flags around exactly one KEY.
func parseWithKey(fs *flag.FlagSet, args []string, use string) (string, error) {
	if err := parseFlags(fs, args); err != nil {
		return "", err
	}
	if fs.NArg() != 1 {
		return "", usagef("%s", use)
	}
	return fs.Arg(0), nil
}

func runRm(args []string) error {
	var cf clientFlags
	fs := newFlags("rm")
	cf.register(fs, false)
	batch := fs.String("batch", "", "read keys, one a line, from FILE or - for stdin")
	ifInc := fs.String("if-incarnation", "", "remove only if the key's newest value is this incarnation (HIGH:LOW as stat prints it); one KEY only")
	if err := parseFlags(fs, args); err != nil {
		return usagef("%v", err)
	}
	keys := fs.Args()
	if *batch != "" {
		var r io.Reader = os.Stdin
		if *batch != "-" {
			f, err := os.Open(*batch)
			if err != nil {
				return err
			}
			defer f.Close()
			r = f
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), api.MaxKeyLen+1)
		for sc.Scan() {
			if k := strings.TrimRight(sc.Text(), "\r"); k != "" {
				keys = append(keys, k)
			}
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("rm --batch: %w", err)
		}
	}
	if len(keys) == 0 {
		return usagef("rm KEY... | rm --batch FILE|- | rm --if-incarnation INC KEY")
	}
	cl, err := cf.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx := context.Background()
	if *ifInc != "" {
		if len(keys) != 1 {
			return usagef("rm --if-incarnation takes exactly one KEY")
		}
		inc, err := api.ParseIncarnation(*ifInc)
		if err != nil {
			return usagef("--if-incarnation: %v", err)
		}
		if err := cl.Remove(ctx, keys[0], client.IfIncarnation(inc)); err != nil {
			return fmt.Errorf("rm %s: %w", keys[0], err)
		}
		return nil
	}
	results, err := cl.BatchRemove(ctx, keys, nil)
	failed := 0
	for _, r := range results {
		if r.Err != nil {
			failed++
			fmt.Fprintf(os.Stderr, "rm %s: %v\n", r.Key, r.Err)
		}
	}
	if err != nil {
		// The keys before the failed chunk have their answers above;
		// the rest are as unknown as the error says.
		return fmt.Errorf("rm: %d of %d keys answered (%d failed), the rest: %w", len(results), len(keys), failed, err)
	}
	if failed > 0 {
		return fmt.Errorf("rm: %d of %d keys failed", failed, len(keys))
	}
	return nil
}

func runStat(args []string) error {
	var cf clientFlags
	fs := newFlags("stat")
	cf.register(fs, true)
	key, err := parseWithKey(fs, args, "stat KEY [--json]")
	if err != nil {
		return err
	}
	cl, err := cf.cluster()
	if err != nil {
		return err
	}
	defer cl.Close()
	var st api.StatResponse
	if err := call(cl, &cf, api.MethodStat, &api.KeyRequest{Key: key}, &st); err != nil {
		return fmt.Errorf("stat %s: %w", key, err)
	}
	if cf.json {
		return printJSON(st)
	}
	o := st.Object
	fmt.Printf("key:          %s\ntenant:       %s\nsize:         %d\nincarnation:  %s\ncreated:      %s\n",
		o.Key, o.Tenant, o.Size, o.Incarnation, time.Unix(0, o.Created).UTC().Format(time.RFC3339Nano))
	for _, r := range o.Replicas {
		if r.DFS != nil {
			fmt.Printf("replica:      %s %s path=%s unit=%d offset=%d size=%d aligned=%d\n", r.Kind, r.DFS.Allocator, r.DFS.Path, r.DFS.UnitID, r.DFS.Offset, r.DFS.Size, r.DFS.AlignedSize)
			continue
		}
		fmt.Printf("replica:      %s segment=%s pool=%s endpoint=%s\n", r.Kind, r.Segment, r.Pool, r.Endpoint)
	}
	if st.PendingPut != nil {
		fmt.Printf("pending put:  %s\n", *st.PendingPut)
	}
	fmt.Printf("pending deletes of older incarnations: %d\n", st.PendingDeletes)
	return nil
}

func runLs(args []string) error {
	var cf clientFlags
	fs := newFlags("ls")
	cf.register(fs, true)
	limit := fs.Int("limit", 0, "stop after this many objects (0 = all)")
	if err := parseFlags(fs, args); err != nil {
		return usagef("%v", err)
	}
	prefix := ""
	if fs.NArg() > 1 {
		return usagef("ls [PREFIX]")
	}
	if fs.NArg() == 1 {
		prefix = fs.Arg(0)
	}
	cl, err := cf.cluster()
	if err != nil {
		return err
	}
	defer cl.Close()
	var all []api.ObjectInfo
	cursor := ""
	for {
		var resp api.ListResponse
		if err := call(cl, &cf, api.MethodList, &api.ListRequest{Prefix: prefix, Cursor: cursor, Limit: 1000}, &resp); err != nil {
			return fmt.Errorf("ls: %w", err)
		}
		all = append(all, resp.Objects...)
		if resp.NextCursor == "" || (*limit > 0 && len(all) >= *limit) {
			break
		}
		cursor = resp.NextCursor
	}
	if *limit > 0 && len(all) > *limit {
		all = all[:*limit]
	}
	if cf.json {
		return printJSON(all)
	}
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	for _, o := range all {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d replicas\n", o.Key, o.Size, o.Incarnation, len(o.Replicas))
	}
	return tw.Flush()
}

func runStatus(args []string) error {
	var cf clientFlags
	fs := newFlags("status")
	cf.register(fs, true)
	if err := parseFlags(fs, args); err != nil {
		return usagef("%v", err)
	}
	var rows []api.StatusResponse
	var errs []error
	for _, addr := range splitList(cf.masters) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		conn, err := transport.Dial(ctx, addr, transport.ClientConfig{Token: cf.token})
		if err != nil {
			cancel()
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		var st api.StatusResponse
		err = conn.Call(ctx, api.MethodStatus, &api.Empty{}, &st)
		conn.Close()
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		rows = append(rows, st)
	}
	if cf.json {
		if err := printJSON(rows); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NODE\tSTATE\tLEADER\tTERM\tCOMMIT\tAPPLIED\tEPOCH\tOBJECTS\tSEGMENTS\tTASKS")
		for _, s := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d/%d\n", s.NodeID, s.RaftState, s.Leader, s.Term, s.CommitIndex, s.AppliedIndex, s.MasterEpoch, s.Objects, s.Segments, s.PendingTasks, s.RegistryCap)
		}
		_ = tw.Flush()
	}
	if len(rows) == 0 {
		return fmt.Errorf("status: no master answered: %w", errors.Join(errs...))
	}
	for _, e := range errs {
		fmt.Fprintf(os.Stderr, "status: %v\n", e)
	}
	return nil
}
