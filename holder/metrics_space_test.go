package holder

import (
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"sexton/api"
	"sexton/internal/fsys"
	"sexton/internal/fsys/errorfs"
)

// gathered is every sample of a registry as "name{label=value}" → value,
// with each family's type.
func gathered(t *testing.T, reg *prometheus.Registry) (map[string]float64, map[string]string) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	vals, types := map[string]float64{}, map[string]string{}
	for _, mf := range mfs {
		types[mf.GetName()] = mf.GetType().String()
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(labels)
			name := mf.GetName()
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.GetGauge() != nil:
				vals[name] = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				vals[name] = m.GetCounter().GetValue()
			}
		}
	}
	return vals, types
}

// The space collector, gathered from its own registry, shows the reserve
// held and the filesystem's size, then — after a tombstone met a full
// disk — the reserve released and the ENOSPC counted on the tombstone
// path; the capacity is the clamped one throughout.
func TestSpaceCollectorGathers(t *testing.T) {
	ff := errorfs.NewFaulty(fsys.OS{})
	ff.SetSpace(2<<20, 2<<20)
	s := openT(t, t.TempDir(), StoreOptions{FS: ff, MetadataReserve: 256 << 10})
	defer s.Close()
	s.SetCapacity(100 << 20)
	reg := prometheus.NewRegistry()
	reg.MustRegister(newSpaceCollector(s))
	mustPut(t, s, "k", incN(1), []byte("value"))

	check := func(stage string, held, tombstoneENOSPC float64) {
		t.Helper()
		vals, types := gathered(t, reg)
		for name, typ := range map[string]string{"sexton_holder_fs_free_bytes": "GAUGE", "sexton_holder_fs_total_bytes": "GAUGE",
			"sexton_holder_capacity_effective_bytes": "GAUGE", "sexton_holder_space_reserve_bytes": "GAUGE",
			"sexton_holder_space_reserve_held": "GAUGE", "sexton_holder_enospc_total": "COUNTER"} {
			if types[name] != typ {
				t.Fatalf("%s: %s is %q, want %s", stage, name, types[name], typ)
			}
		}
		if vals["sexton_holder_fs_total_bytes"] != 2<<20 || vals["sexton_holder_space_reserve_bytes"] != 256<<10 {
			t.Fatalf("%s: %v", stage, vals)
		}
		if c := vals["sexton_holder_capacity_effective_bytes"]; c <= 0 || c >= 2<<20 {
			t.Fatalf("%s: capacity %v, want clamped below the 2 MiB filesystem", stage, c)
		}
		if vals["sexton_holder_space_reserve_held"] != held || vals[`sexton_holder_enospc_total{path=tombstone}`] != tombstoneENOSPC {
			t.Fatalf("%s: held %v enospc %v, want %v %v", stage, vals["sexton_holder_space_reserve_held"],
				vals[`sexton_holder_enospc_total{path=tombstone}`], held, tombstoneENOSPC)
		}
		for _, p := range []string{"put", "floor", "gc_floor", "gc_intent", "gc_meta", "gc_data", "reserve"} {
			if v, ok := vals["sexton_holder_enospc_total{path="+p+"}"]; !ok || v != 0 {
				t.Fatalf("%s: enospc{path=%s} = %v (exported %v), want 0", stage, p, v, ok)
			}
		}
	}
	check("reserve held", 1, 0)
	ff.TakeSpace(ff.FreeSpace())
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "k", incN(1))}), api.AckRemoved)
	check("reserve released", 0, 1)
	if v, _ := gathered(t, reg); v["sexton_holder_fs_free_bytes"] != float64(ff.FreeSpace()) {
		t.Fatalf("fs_free_bytes %v, model has %d", v["sexton_holder_fs_free_bytes"], ff.FreeSpace())
	}
}
