package rebuild

import (
	"fmt"
	"strings"
	"testing"

	"sexton/api"
	"sexton/dfsio"
	"sexton/fsm/dfsalloc"
)

// put is a put record of key@low in bucket 1 at off.
func put(key string, low uint64, off int64) dfsio.RangeRecord {
	d := api.DFSDescriptor{Allocator: dfsalloc.KindBucket, Path: dfsalloc.BucketPath(1), UnitID: 1, Offset: off, Size: 10, AlignedSize: 4096}
	return dfsio.PutRecord(key, "t", inc(low), d, []byte(fmt.Sprintf("%s@%d", key, low)))
}

func removal(r dfsio.RangeRecord, through bool) dfsio.RangeRecord {
	return dfsio.RemovedRecord(r.Key, r.Inc, r.Desc(), through)
}

// dfsObjects shows objects with DFS replicas as key@low:seg+dfs@off.
func dfsObjects(p *Plan) string {
	var parts []string
	for _, o := range p.Objects {
		var reps []string
		for _, r := range o.Replicas {
			if r.DFS != nil {
				reps = append(reps, fmt.Sprintf("dfs@%d", r.DFS.Offset))
				continue
			}
			reps = append(reps, string(r.Segment))
		}
		parts = append(parts, fmt.Sprintf("%s@%d:%s", o.Key, o.Incarnation.Low, strings.Join(reps, "+")))
	}
	return strings.Join(parts, " ")
}

// The DFS root's records are copies under the holders' rules: the newest
// incarnation nothing removed wins, wherever it is; a removal record kills
// its incarnation and every older one of the key, holder copies included
// (a revoke's or a supersede's only its own); a holder's tombstone kills
// no DFS record (it may be a revoked newer put's); a range that does not
// verify is reported, and an older record is never a fallback.
func TestMergeDFSRecordsUnderTheHoldersRules(t *testing.T) {
	torn := map[string]bool{}
	a1, a2 := put("a", 100, 0), put("a", 200, 4096)      // a: overwritten on the DFS root
	b1 := put("b", 110, 8192)                            // b: removed (record written)
	c1, c2 := put("c", 120, 12288), put("c", 130, 16384) // c: 130 revoked after its record
	d1 := put("d", 140, 20480)                           // d: newer than a holder copy
	e1 := put("e", 150, 24576)                           // e: same incarnation as on a holder
	f1 := put("f", 80, 28672)                            // f: older than a holder tombstone (a revoked put's)
	f2 := put("f2", 80, 45056)                           // f2: superseded (its record killed), the newer one removed on a holder
	g1, g2 := put("g", 160, 32768), put("g", 170, 36864) // g: newest torn, no fallback
	h1 := put("h", 180, 40960)                           // h: a DFS removal kills an older holder copy
	torn[fmt.Sprint(g2.Offset)] = true
	recs := []dfsio.RangeRecord{a1, a2, b1, removal(b1, true), c1, c2, removal(c2, false), d1, e1, f1, f2, removal(f2, false), g1, g2, h1, removal(h1, true)}
	verify := func(r dfsio.RangeRecord) bool { return !torn[fmt.Sprint(r.Offset)] }
	p, err := MergeWith([]Scan{
		scan("s1", live("d", 90, 10, 1), live("e", 150, 10, 2), dead("f", 85), dead("f2", 85), live("h", 175, 10, 3)),
	}, Options{DFS: &DFSOptions{ClusterID: 7, Records: recs, Verify: verify}})
	if err != nil {
		t.Fatal(err)
	}
	wantPlan(t, p, dfsObjects, "a@200:dfs@4096 c@120:dfs@12288 d@140:dfs@20480 e@150:s1+dfs@24576 f@80:dfs@28672", "s1/d@90 s1/h@175", "b,f2,g,h")
	if len(p.DFSRejected) != 1 || p.DFSRejected[0].Key != "g" || p.DFSRejected[0].Incarnation != inc(170) {
		t.Errorf("rejected %+v, want g@170 only", p.DFSRejected)
	}
	if p.MaxSeen != 200 || p.DFSRecords != len(recs) || p.DFSAdopted != 5 {
		t.Errorf("max seen %d, records %d, adopted %d", p.MaxSeen, p.DFSRecords, p.DFSAdopted)
	}
	// Every put record not adopted and not killed yet gets a removal
	// record of its own: a@100 (overwritten), g@160 and g@170 (dropped).
	var kills []string
	for _, r := range p.DFSKills {
		if r.Op != dfsio.RecordRemoved || r.Through {
			t.Errorf("kill %+v is not an exact removal record", r)
		}
		kills = append(kills, fmt.Sprintf("%s@%d", r.Key, r.Inc.Low))
	}
	if got, want := strings.Join(kills, " "), "a@100 g@160 g@170"; got != want {
		t.Errorf("kills %q, want %q", got, want)
	}
}

// Without holders the DFS root's marker names the cluster; with holders
// of another cluster the merge refuses.
func TestMergeDFSOnlyAndClusterMismatch(t *testing.T) {
	recs := []dfsio.RangeRecord{put("a", 10, 0)}
	ok := func(dfsio.RangeRecord) bool { return true }
	p, err := MergeWith(nil, Options{DFS: &DFSOptions{ClusterID: 9, Records: recs, Verify: ok}})
	if err != nil || p.ClusterID != 9 || dfsObjects(p) != "a@10:dfs@0" || p.IncFloor != 10+IncMargin {
		t.Fatalf("DFS-only plan %+v %v", p, err)
	}
	if _, err := MergeWith([]Scan{scan("s1", live("x", 1, 1, 1))}, Options{DFS: &DFSOptions{ClusterID: 9, Records: recs, Verify: ok}}); err == nil {
		t.Fatal("holders of cluster 7 merged with the DFS root of cluster 9")
	}
}

// A range freed and reused whose old bytes still verify (identical
// values): the newer record keeps the range, the older object is dropped.
func TestMergeDFSOverlappingRangesKeepTheNewer(t *testing.T) {
	recs := []dfsio.RangeRecord{put("old", 10, 0), put("new", 20, 0)}
	p, err := MergeWith(nil, Options{DFS: &DFSOptions{ClusterID: 7, Records: recs, Verify: func(dfsio.RangeRecord) bool { return true }}})
	if err != nil {
		t.Fatal(err)
	}
	if got := dfsObjects(p); got != "new@20:dfs@0" || len(p.DFSRejected) != 1 || p.DFSRejected[0].Key != "old" || p.DFSAdopted != 1 {
		t.Fatalf("objects %q rejected %+v adopted %d", got, p.DFSRejected, p.DFSAdopted)
	}
}

// The crash points of the DFS write and removal paths, as the root holds
// them after a loss of every master:
//   - value written, put record not (a crash between them): the put never
//     ended; the older acknowledged value is adopted;
//   - put record written, PutEnd never applied: its outcome was unknown;
//     like a holder copy of such a put it is adopted (the put took
//     effect);
//   - a removal record written twice (the leader died between the record
//     and DFSMarked; the next one wrote it again): killed once, no more;
//   - without MOONCAKE_DFS_FSYNC the put record reached the disk but the
//     value did not (its range reads zeros): the key is dropped, never
//     served with the older, overwritten value.
func TestMergeDFSCrashPoints(t *testing.T) {
	ok := map[string]bool{}
	verify := func(r dfsio.RangeRecord) bool { return ok[fmt.Sprintf("%s@%d", r.Key, r.Inc.Low)] }
	merge := func(recs ...dfsio.RangeRecord) *Plan {
		t.Helper()
		p, err := MergeWith(nil, Options{DFS: &DFSOptions{ClusterID: 7, Records: recs, Verify: verify}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a1 := put("a", 10, 0)
	ok["a@10"], ok["a@11"] = true, true // a@11's bytes are there, its record is not
	if got := dfsObjects(merge(a1)); got != "a@10:dfs@0" {
		t.Errorf("value without its record: %q, want the older a@10", got)
	}
	b1, b2 := put("b", 10, 4096), put("b", 11, 8192)
	ok["b@10"], ok["b@11"] = true, true
	if got := dfsObjects(merge(b1, b2)); got != "b@11:dfs@8192" {
		t.Errorf("record without PutEnd: %q, want b@11 (an outcome-unknown put that took effect)", got)
	}
	c1 := put("c", 10, 12288)
	ok["c@10"] = true
	p := merge(c1, removal(c1, true), removal(c1, true))
	if got := dfsObjects(p); got != "" || len(p.DFSKills) != 0 || len(p.Dropped) != 1 {
		t.Errorf("removal record written twice: objects %q, kills %d, dropped %+v; want c removed once", got, len(p.DFSKills), p.Dropped)
	}
	d1, d2 := put("d", 10, 16384), put("d", 11, 20480)
	ok["d@10"] = true // d@11's record is durable, its bytes are not
	p = merge(d1, d2)
	if got := dfsObjects(p); got != "" || len(p.Dropped) != 1 || len(p.DFSRejected) != 1 {
		t.Errorf("record without its bytes: objects %q, dropped %+v, rejected %+v; want d dropped, d@11 reported", got, p.Dropped, p.DFSRejected)
	}
}
