package jsonout

import (
	"reflect"
	"strings"
	"testing"
	"unicode"

	"sexton/api"
	"sexton/holder"
	"sexton/snapshot"
)

// goSnake is the snake_case of a Go field name: LiveObjects live_objects,
// ClusterID cluster_id, DFSRecords dfs_records.
func goSnake(name string) string {
	r := []rune(name)
	var b strings.Builder
	for i, c := range r {
		if unicode.IsUpper(c) && i > 0 && (unicode.IsLower(r[i-1]) || (i+1 < len(r) && unicode.IsLower(r[i+1]))) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

// jsonKeys are the json keys of a struct type's fields.
func jsonKeys(t reflect.Type) map[string]bool {
	keys := map[string]bool{}
	for i := range t.NumField() {
		if k, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); k != "" && k != "-" {
			keys[k] = true
		}
	}
	return keys
}

// fieldNames are a struct type's exported fields, embedded ones flattened.
func fieldNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		switch {
		case f.Anonymous:
			out = append(out, fieldNames(f.Type)...)
		case f.IsExported():
			out = append(out, f.Name)
		}
	}
	return out
}

// TestOutputStructsCoverTheirSources: every field of the type an output
// struct renders has its key there (its snake_case name, or the one
// renamed below), so a field added to an api or holder type does not
// silently stay out of --json. Fields left out on purpose are listed.
func TestOutputStructsCoverTheirSources(t *testing.T) {
	for _, c := range []struct {
		src     []any
		out     any
		renamed map[string]string // Go field -> json key
		skipped []string          // not for the CLI
	}{
		{src: []any{holder.InspectReport{}}, out: Inspect{}},
		{src: []any{holder.Identity{}}, out: Identity{}, renamed: map[string]string{"V": "version"}},
		{src: []any{holder.BucketStat{}}, out: Bucket{}},
		{src: []any{api.ObjectInfo{}}, out: Object{}},
		{src: []any{api.ReplicaLocation{}}, out: Replica{}, skipped: []string{"Grant"}},
		{src: []any{api.DFSDescriptor{}}, out: DFSDesc{}, renamed: map[string]string{"UnitID": "unit"}},
		{src: []any{api.StatResponse{}}, out: Stat{}},
		// Progress is in each task; DFSRecordsPending answers a key's
		// listing only, which rm --wait reads and operator tasks never makes.
		{src: []any{api.ListTasksResponse{}}, out: Tasks{}, skipped: []string{"Progress", "DFSRecordsPending"}},
		{src: []any{api.LocalDeleteTask{}, api.TaskProgress{}}, out: Task{}},
		{src: []any{api.SegmentInfo{}}, out: Segment{}},
		{src: []any{snapshot.Header{}, snapshot.Counts{}}, out: SnapshotInspect{}},
	} {
		out := reflect.TypeOf(c.out)
		keys := jsonKeys(out)
		if len(keys) != out.NumField() {
			t.Errorf("%v: a field without a json tag", out)
		}
		for _, src := range c.src {
			st := reflect.TypeOf(src)
			for _, f := range fieldNames(st) {
				if contains(c.skipped, f) {
					continue
				}
				k := goSnake(f)
				if r, ok := c.renamed[f]; ok {
					k = r
				}
				if !keys[k] {
					t.Errorf("%v.%s has no %q in %v", st, f, k, out)
				}
			}
		}
	}
}

func contains(s []string, v string) bool {
	for _, e := range s {
		if e == v {
			return true
		}
	}
	return false
}
