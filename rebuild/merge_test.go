package rebuild

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"sexton/api"
)

func inc(low uint64) api.ObjectIncarnation { return api.ObjectIncarnation{High: 7, Low: low} }

func live(key string, low uint64, size int64, crc uint32) api.HolderRecord {
	return api.HolderRecord{Key: key, Tenant: "t", Incarnation: inc(low), Size: size, CRC32C: crc}
}

func dead(key string, low uint64) api.HolderRecord {
	return api.HolderRecord{Key: key, Incarnation: inc(low), Tombstoned: true}
}

func scan(seg string, recs ...api.HolderRecord) Scan {
	return Scan{Endpoint: seg + ":1", Segment: api.SegmentID(seg), ClusterID: 7, Pool: "p-" + seg, Records: recs}
}

func objects(p *Plan) string {
	var parts []string
	for _, o := range p.Objects {
		var segs []string
		for _, r := range o.Replicas {
			segs = append(segs, string(r.Segment))
		}
		parts = append(parts, fmt.Sprintf("%s@%d:%s", o.Key, o.Incarnation.Low, strings.Join(segs, "+")))
	}
	return strings.Join(parts, " ")
}

func deletes(p *Plan) string {
	var parts []string
	for _, d := range p.Deletes {
		parts = append(parts, fmt.Sprintf("%s/%s@%d", d.Segment, d.Key, d.Incarnation.Low))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// wantPlan checks what p adopts (rendered by render: objects or
// dfsObjects), the delete tasks it makes and the keys it drops (joined by
// commas, in p's order).
func wantPlan(t *testing.T, p *Plan, render func(*Plan) string, wantObjects, wantDeletes, wantDropped string) {
	t.Helper()
	if got := render(p); got != wantObjects {
		t.Errorf("objects %q, want %q", got, wantObjects)
	}
	if got := deletes(p); got != wantDeletes {
		t.Errorf("deletes %q, want %q", got, wantDeletes)
	}
	var dropped []string
	for _, d := range p.Dropped {
		dropped = append(dropped, d.Key)
	}
	if got := strings.Join(dropped, ","); got != wantDropped {
		t.Errorf("dropped %q, want %q (%+v)", got, wantDropped, p.Dropped)
	}
}

func TestMergeRules(t *testing.T) {
	p, err := Merge([]Scan{
		// a: overwritten (300 on s1, s2), the old 200 still live on s3.
		// b: removed — tombstoned on s1, its copy on s2 not yet.
		// c: a revoked put 50 tombstoned on s3; the older 40 is live.
		// d: only a tombstone floor left.
		scan("s1", live("a", 300, 10, 1), dead("b", 100), dead("d", 900)),
		scan("s2", live("a", 300, 10, 1), live("b", 100, 5, 2)),
		scan("s3", live("a", 200, 8, 3), live("c", 40, 4, 4), dead("c", 50)),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantPlan(t, p, objects, "a@300:s1+s2 c@40:s3", "s2/b@100 s3/a@200", "b,d")
	if p.MaxSeen != 900 || p.IncFloor != 900+IncMargin || p.ClusterID != 7 || p.Records != 8 || p.Bytes != 14 {
		t.Errorf("max seen %d floor %d cluster %x records %d bytes %d, want 900 900+margin 7 8 14", p.MaxSeen, p.IncFloor, p.ClusterID, p.Records, p.Bytes)
	}
	if len(p.Segments) != 3 || p.Segments[2].Pool != "p-s3" {
		t.Errorf("segments %+v", p.Segments)
	}
}

// Copies of the winning incarnation that differ are verified; only the
// verified ones are kept and the others get delete tasks.
func TestMergeKeepsOnlyVerifiedCopies(t *testing.T) {
	var asked []string
	verify := func(key string, _ api.ObjectIncarnation, c Copy) bool {
		asked = append(asked, string(c.Segment))
		return c.Segment != "s2" // s2's copy does not read back as its record says
	}
	p, err := Merge([]Scan{
		scan("s1", live("a", 5, 10, 1)),
		scan("s2", live("a", 5, 10, 9)),
		scan("s3", live("a", 5, 10, 1), live("b", 6, 3, 3)),
	}, verify)
	if err != nil {
		t.Fatal(err)
	}
	wantPlan(t, p, objects, "a@5:s1+s3 b@6:s3", "s2/a@5", "")
	if len(p.Conflicts) != 1 || !slices.Equal(p.Conflicts[0].Kept, []api.SegmentID{"s1", "s3"}) {
		t.Errorf("conflicts %+v", p.Conflicts)
	}
	if !slices.Equal(asked, []string{"s1", "s2", "s3"}) {
		t.Errorf("verified %v; agreeing copies (b) must not be read", asked)
	}
}

func TestMergeRefusesMixedClusters(t *testing.T) {
	other := scan("s2", live("a", 5, 1, 1))
	other.ClusterID = 8
	if _, err := Merge([]Scan{scan("s1", live("a", 5, 1, 1)), other}, nil); err == nil || !strings.Contains(err.Error(), "disagree") {
		t.Fatalf("mixed clusters: %v, want a refusal", err)
	}
	if _, err := Merge([]Scan{scan("s1"), scan("s1")}, nil); err == nil || !strings.Contains(err.Error(), "both have segment") {
		t.Fatalf("one segment twice: %v, want a refusal", err)
	}
	if _, err := Merge([]Scan{scan("s1", live("b", 5, 1, 1), live("a", 6, 1, 1))}, nil); err == nil {
		t.Fatal("unsorted records accepted")
	}
	// A never-mounted, empty holder is skipped, not a disagreement.
	empty := scan("s9")
	empty.ClusterID = 0
	if _, err := Merge([]Scan{scan("s1", live("a", 5, 1, 1)), empty}, nil); err != nil {
		t.Fatalf("empty unbound holder: %v", err)
	}
}

// A rerun (a late holder's adoption) decides the lost cluster's copies
// as the first rebuild would have with that holder present: an older live
// copy below a newer tombstone is the same ambiguity (a revoked put, or an
// overwrite that was then removed) and keeps the acknowledged older value;
// keys removed since the rebuild are the fsm's removal memory's to refuse.
func TestMergeRerunDecidesLikeTheFirstRebuild(t *testing.T) {
	scans := []Scan{
		scan("s1", dead("k", 500), live("kept", 20, 1, 1)),
		scan("s3", live("k", 400, 9, 9), live("only", 30, 2, 2)),
	}
	first, err := Merge(scans, nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := MergeWith(scans, Options{OwnAbove: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	want := "k@400:s3 kept@20:s1 only@30:s3"
	if objects(first) != want || objects(again) != want || deletes(again) != "" {
		t.Errorf("first %q, rerun %q (deletes %q); want both %q and no deletes", objects(first), objects(again), deletes(again), want)
	}
}

// On a rerun the serving cluster's own copies (above its incarnation
// base) are neither adopted nor deleted: a revoked put's copy, newer than
// the value the table serves, must not win over it; the lost cluster's
// copies still merge as before.
func TestMergeRerunLeavesTheServingClustersOwnCopies(t *testing.T) {
	const base = 1000
	scans := []Scan{
		scan("s1", live("k", 5, 1, 1), live("mine", base+7, 3, 3), live("revoked", base+9, 4, 4)),
		scan("s2", live("old", 3, 2, 2), dead("old", base+2), live("revoked", base+4, 5, 5)),
	}
	p, err := MergeWith(scans, Options{OwnAbove: base})
	if err != nil {
		t.Fatal(err)
	}
	wantPlan(t, p, objects, "k@5:s1 old@3:s2", "", "")
	if p.Own != 2 || p.MaxSeen != 5 {
		t.Errorf("own %d, max seen %d; want 2 and 5", p.Own, p.MaxSeen)
	}
}

// The floor leaves room above the newest scanned incarnation for the
// copies of holders that were not scanned.
func TestMergeIncarnationFloorHasAMargin(t *testing.T) {
	p, err := Merge([]Scan{scan("s1", live("a", 77, 1, 1), dead("b", 90))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.MaxSeen != 90 || p.IncFloor != 90+IncMargin || IncMargin < 1<<32 {
		t.Fatalf("max seen %d, floor %d; want 90 and 90+%d", p.MaxSeen, p.IncFloor, uint64(IncMargin))
	}
	// A copy a missing holder wrote after every scanned one, even 2^31
	// puts later, is below the floor: the rebuilt cluster's incarnations
	// (floor + Raft index) never meet it.
	if late := p.MaxSeen + 1<<31; late >= p.IncFloor {
		t.Fatalf("a late copy %d is not below the floor %d", late, p.IncFloor)
	}
}

// A segment the holders know of that was neither scanned nor allowed
// missing stops the merge, naming it and the flag; allowed, it is listed.
func TestMergeRefusesAnUnaccountedSegment(t *testing.T) {
	s1 := scan("s1", live("a", 5, 1, 1))
	s1.KnownSegments = []api.SegmentID{"s1", "s2", "s3"}
	s2 := scan("s2")
	s2.KnownSegments = []api.SegmentID{"s1", "s2"}
	_, err := Merge([]Scan{s1, s2}, nil)
	if err == nil || !strings.Contains(err.Error(), "s3") || !strings.Contains(err.Error(), "--allow-missing-segments s3") {
		t.Fatalf("unscanned s3: %v, want a refusal naming it and the flag", err)
	}
	p, err := MergeWith([]Scan{s1, s2}, Options{AllowMissing: []api.SegmentID{"s3"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Missing, []api.SegmentID{"s3"}) || len(p.Scanned) != 2 || p.Scanned[0].Records != 1 || p.Scanned[1].Segment != "s2" {
		t.Fatalf("missing %v, scanned %+v", p.Missing, p.Scanned)
	}
}
