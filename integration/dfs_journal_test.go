package integration

import (
	"testing"
	"time"

	"sexton/api"
	"sexton/dfsio"
	"sexton/internal/testutil"
)

// TestDFSJournalRecordsPutsAndRemovals: every acknowledged DFS put has a
// put record in the root's journal naming its key, incarnation and exact
// descriptor, whose CRC is the value's; a Remove makes the leader append
// a removal record (through) for the removed incarnation, written before
// rm --wait returns; an overwrite adds the newer put record and a removal
// record of the overwritten incarnation alone.
func TestDFSJournalRecordsPutsAndRemovals(t *testing.T) {
	root, env, c := startDFSCluster(t, 1, "MOONCAKE_DFS_FSYNC=1")
	cl := c.client(0)
	vals := map[string][]byte{"a": value("a1", 3000), "b": value("b", 5000)}
	dfsPut(t, c, env, "a", vals["a"])
	dfsPut(t, c, env, "b", vals["b"])
	oldA := dfsDesc(t, cl, "a")
	vals["a"] = value("a2", 7000)
	dfsPut(t, c, env, "a", vals["a"])
	descs := map[string]api.DFSDescriptor{"a": dfsDesc(t, cl, "a"), "b": dfsDesc(t, cl, "b")}
	incs := map[string]api.ObjectIncarnation{}
	for k := range descs {
		incs[k] = getObject(t, cl, k).Object.Incarnation
	}
	// rm --wait returns once the removal is done: for a DFS replica, once
	// its removal record is in the journal.
	if out, err := dfsCLI(t, c, env, "rm", "b", "--wait", "20s"); err != nil {
		t.Fatalf("rm --wait b: %v\n%s", err, out)
	}
	fs := openDFSRoot(t, root)
	scan := func() (removedB, removedOldA bool, recs []dfsio.RangeRecord) {
		recs, torn, err := fs.ScanRecords()
		if err != nil || torn != 0 {
			t.Fatalf("scan: torn %d, %v", torn, err)
		}
		for _, r := range recs {
			if r.Op != dfsio.RecordRemoved {
				continue
			}
			switch {
			case r.Key == "b" && r.Inc == incs["b"] && r.Through && r.Desc() == descs["b"]:
				removedB = true
			case r.Key == "a" && r.Inc.Less(incs["a"]) && !r.Through && r.Desc() == oldA:
				removedOldA = true // the overwritten incarnation, itself only
			default:
				t.Fatalf("removal record %+v; want b %s through at %+v, or a's overwritten one at %+v", r, incs["b"], descs["b"], oldA)
			}
		}
		return removedB, removedOldA, recs
	}
	if removedB, _, _ := scan(); !removedB {
		t.Fatal("no removal record of b once rm --wait returned")
	}
	var recs []dfsio.RangeRecord
	testutil.WaitFor(t, 20*time.Second, func() bool {
		_, oldGone, all := scan()
		recs = all
		return oldGone
	}, "the removal record of a's overwritten incarnation")
	puts := map[string][]dfsio.RangeRecord{}
	for _, r := range recs {
		if r.Op == dfsio.RecordPut {
			puts[r.Key] = append(puts[r.Key], r)
		}
	}
	if len(puts["a"]) != 2 || len(puts["b"]) != 1 {
		t.Fatalf("put records %+v; want two of a and one of b", puts)
	}
	if puts["a"][0].Desc() != oldA || !puts["a"][0].Inc.Less(incs["a"]) {
		t.Fatalf("first put record of a %+v; want %+v below %s", puts["a"][0], oldA, incs["a"])
	}
	for _, k := range []string{"a", "b"} {
		r := puts[k][len(puts[k])-1]
		if r.Inc != incs[k] || r.Desc() != descs[k] || r.CRC != dfsio.Checksum(vals[k]) {
			t.Fatalf("put record of %s %+v; want %s at %+v with the value's CRC", k, r, incs[k], descs[k])
		}
		got, err := fs.ReadAt(r.Desc())
		if err != nil || dfsio.Checksum(got) != r.CRC {
			t.Fatalf("the range of %s's record does not read back with its CRC: %v", k, err)
		}
	}
}
