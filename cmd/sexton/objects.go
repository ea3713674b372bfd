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
	"sexton/internal/buildinfo"
	"sexton/internal/cliflag"
	"sexton/jsonout"
)

func setupPut(fs *flag.FlagSet) runFunc {
	replicas := fs.Int("replicas", 1, "LOCAL_DISK replicas (0 when only --dfs-replicas is given)")
	dfsReplicas := fs.Int("dfs-replicas", 0, "DFS replicas (0 or 1); the value is written with pwrite below MOONCAKE_DFS_ROOT_DIR")
	tenant := fs.String("tenant", "", "tenant")
	ifAbsent := fs.Bool("if-absent", false, "fail with OBJECT_ALREADY_EXISTS instead of overwriting")
	return func(e *env, args []string) error {
		replicasSet := false
		fs.Visit(func(f *flag.Flag) { replicasSet = replicasSet || f.Name == "replicas" })
		if *dfsReplicas > 0 && !replicasSet {
			*replicas = 0
		}
		key := args[0]
		var value []byte
		var err error
		if len(args) == 1 || args[1] == "-" {
			value, err = io.ReadAll(io.LimitReader(os.Stdin, client.DataMaxFrame))
		} else {
			value, err = os.ReadFile(args[1])
		}
		if err != nil {
			return fmt.Errorf("put %s: read value: %w", key, err)
		}
		cl, err := e.client()
		if err != nil {
			return err
		}
		inc, err := cl.Put(context.Background(), key, value, client.PutOptions{Tenant: *tenant, Replicas: *replicas,
			DFSReplicas: *dfsReplicas, IfAbsent: *ifAbsent})
		if err != nil {
			return fmt.Errorf("put %s: %w", key, err)
		}
		return e.output(jsonout.Put{Kind: jsonout.KindPut, Key: key, Incarnation: inc.String(), Size: int64(len(value))}, func() error {
			fmt.Printf("put %s: %d bytes, incarnation %s\n", key, len(value), inc)
			return nil
		})
	}
}

func setupGet(fs *flag.FlagSet) runFunc {
	out := fs.String("o", "", "write the value to this file instead of stdout")
	return func(e *env, args []string) error {
		key := args[0]
		cl, err := e.client()
		if err != nil {
			return err
		}
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
}

func setupRm(fs *flag.FlagSet) runFunc {
	batch := fs.String("batch", "", "read keys, one a line, from FILE or - for stdin")
	ifInc := fs.String("if-incarnation", "", "remove only if the key's newest value is this incarnation (HIGH:LOW as stat prints it); one KEY only")
	wait := fs.Duration("wait", 0, "after the removes commit, wait up to this long until every holder has durably tombstoned the removed keys' bytes, showing per replica where it stands (--prefix: until the job is done)")
	bulk := addRmPrefixFlags(fs)
	return func(e *env, keys []string) error {
		if bulk.wanted() {
			return runRmPrefix(e, bulk, keys, *wait)
		}
		if *batch != "" {
			more, err := readKeys(*batch)
			if err != nil {
				return fmt.Errorf("rm --batch: %w", err)
			}
			keys = append(keys, more...)
		}
		if len(keys) == 0 {
			return usagef("rm: name at least one key")
		}
		cl, err := e.client()
		if err != nil {
			return err
		}
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
				err = fmt.Errorf("rm %s: %w", keys[0], err)
				return rmFailed(e, []jsonout.KeyResult{{Key: keys[0], Code: string(api.CodeOf(err)), Error: jsonout.OneLine(err)}}, err)
			}
			return waitDeleted(e, cl, keys, *wait)
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
			res, _ := jsonout.KeyResults(keys, results, err)
			return rmFailed(e, res, fmt.Errorf("rm: %d of %d keys answered (%d failed), the rest: %w", len(results), len(keys), failed, err))
		}
		if failed > 0 {
			res, _ := jsonout.KeyResults(keys, results, nil)
			return rmFailed(e, res, fmt.Errorf("rm: %d of %d keys failed", failed, len(keys)))
		}
		return waitDeleted(e, cl, keys, *wait)
	}
}

// rmFailed ends an rm some of whose keys failed: with --json it prints
// the per-key results (removed counts the keys that were), then returns
// err, so the exit status is still non-zero.
func rmFailed(e *env, res []jsonout.KeyResult, err error) error {
	if !e.json {
		return err
	}
	removed := 0
	for _, r := range res {
		if r.OK {
			removed++
		}
	}
	if perr := printJSON(jsonout.Rm{Removed: removed, Replicas: []jsonout.Task{}, Failed: len(res) - removed, Keys: res}); perr != nil {
		return errors.Join(err, perr)
	}
	return err
}

// readKeys reads keys, one a line, from file or stdin ("-").
func readKeys(file string) ([]string, error) {
	var r io.Reader = os.Stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	var keys []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), api.MaxKeyLen+1)
	for sc.Scan() {
		if k := strings.TrimRight(sc.Text(), "\r"); k != "" {
			keys = append(keys, k)
		}
	}
	return keys, sc.Err()
}

func runStat(e *env, args []string) error {
	key := args[0]
	var st api.StatResponse
	statErr := e.call(api.MethodStat, &api.KeyRequest{Key: key}, &st)
	if statErr != nil && api.CodeOf(statErr) != api.CodeObjectNotFound {
		return fmt.Errorf("stat %s: %w", key, statErr)
	}
	// The key's delete tasks, of any incarnation: for a removed key
	// they are what is left of it.
	var deletes api.ListTasksResponse
	if statErr != nil || st.PendingDeletes > 0 {
		if err := e.call(api.MethodListTasks, &api.ListTasksRequest{Key: key}, &deletes); err != nil {
			return fmt.Errorf("stat %s: pending deletes: %w", key, err)
		}
	}
	if statErr != nil && deletes.Total == 0 {
		return fmt.Errorf("stat %s: %w", key, statErr)
	}
	now := time.Now()
	out := jsonout.StatOf(st, statErr == nil, deletes, now)
	if statErr != nil {
		// Removed, its deletes still pending: shown, and still an
		// OBJECT_NOT_FOUND for scripts that test existence.
		if err := e.output(out, func() error {
			fmt.Printf("key:          %s\nremoved:      %d delete tasks pending\n", key, deletes.Total)
			return printDeleteTable(os.Stdout, out.Deletes, false, now)
		}); err != nil {
			return err
		}
		return fmt.Errorf("stat %s: removed, %d delete tasks pending: %w", key, deletes.Total, statErr)
	}
	return e.output(out, func() error {
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
		if len(out.Deletes) > 0 {
			return printDeleteTable(os.Stdout, out.Deletes, false, now)
		}
		return nil
	})
}

func setupLs(fs *flag.FlagSet) runFunc {
	limit := fs.Int("limit", 0, "stop after this many objects (0 = all)")
	return func(e *env, args []string) error {
		prefix := ""
		if len(args) == 1 {
			prefix = args[0]
		}
		cl, err := e.client()
		if err != nil {
			return err
		}
		all, err := cl.ListAll(prefix, *limit, e.timeout+time.Second)
		if err != nil {
			return fmt.Errorf("ls: %w", err)
		}
		return e.output(jsonout.Objects(all), func() error {
			tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
			for _, o := range all {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%d replicas\n", o.Key, o.Size, o.Incarnation, len(o.Replicas))
			}
			return tw.Flush()
		})
	}
}

// runStatus asks every master named, not only the leader.
func runStatus(e *env, _ []string) error {
	cc, err := e.clientConfig()
	if err != nil {
		return err
	}
	rows, errs := client.EachStatus(cliflag.SplitList(e.masters), cc, 3*time.Second)
	if err := e.output(rows, func() error {
		tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NODE\tSTATE\tLEADER\tTERM\tCOMMIT\tAPPLIED\tEPOCH\tOBJECTS\tSEGMENTS\tTASKS\tLOG STORE\tDATA DIR FREE\tVERSION")
		for _, s := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d/%d\t%s\t%s\t%s\n", s.NodeID, s.RaftState, s.Leader, s.Term, s.CommitIndex, s.AppliedIndex, s.MasterEpoch, s.Objects, s.Segments, s.PendingTasks, s.RegistryCap, map[bool]string{true: "CANNOT-WRITE", false: "ok"}[s.LogStoreCannotWrite], freeBytes(s.DataDirFreeBytes), buildVersion(s.Build))
		}
		_ = tw.Flush()
		for _, s := range rows {
			if s.LogStoreCannotWrite {
				fmt.Fprintf(os.Stderr, "status: %s: log store cannot write (the node does not campaign until a write works again): %s\n", s.NodeID, s.LogStoreError)
			}
		}
		for _, s := range rows {
			if s.Rebuild == nil || s.RaftState != "Leader" {
				continue
			}
			r := s.Rebuild
			window := "open"
			switch {
			case r.Closed:
				window = "closed"
			case r.Overflowed:
				window = "open, removal memory overflowed: adoption of keys absent from the table is refused"
			}
			fmt.Printf("rebuild of cluster %016x: finished=%v, adoption window %s, %d removed keys remembered\n", r.Cluster, r.Finished, window, r.RemovedKeys)
			printRefusedMounts(s.RefusedMounts)
		}
		return nil
	}); err != nil {
		return err
	}
	if len(rows) == 0 {
		return fmt.Errorf("status: no master answered: %w", errors.Join(errs...))
	}
	for _, e := range errs {
		fmt.Fprintf(os.Stderr, "status: %v\n", e)
	}
	return nil
}

// buildVersion is the VERSION column of `sexton status`: the master's
// version and short commit; "-" from a master that does not report it.
func buildVersion(b *api.BuildInfo) string {
	if b == nil {
		return "-"
	}
	if b.Commit == "" || b.Commit == "unknown" {
		return b.Version
	}
	return b.Version + " (" + buildinfo.Info{Commit: b.Commit, Modified: b.Modified}.ShortCommit() + ")"
}

// freeBytes is a statfs byte count for a table: binary units, "?" when
// the master could not tell.
func freeBytes(b int64) string {
	if b < 0 {
		return "?"
	}
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%dB", b)
	}
	v, i := float64(b), 0
	for v >= unit && i < 5 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f%ciB", v, "KMGTP"[i-1])
}
