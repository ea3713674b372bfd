package snapshot

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"sexton/api"
)

// jobStream writes a 1.4.0 snapshot whose jobs section holds j.
func jobStream(t *testing.T, j *Job) ([]byte, error) {
	t.Helper()
	w, buf := writerAtJobs(t, fixtureHeader140)
	if err := w.WriteRecord(j); err != nil {
		return nil, err
	}
	must(t, w.EndSection())
	must(t, w.Close())
	return buf.Bytes(), nil
}

// TestJobKeptAtItsBoundFitsAChunk: a job keeping as many keys as
// api.MaxJobKeptBytes allows — the longest keys, or the shortest with the
// largest incarnations — with the longest prefix and cursor, encodes into
// one snapshot chunk and reads back whole.
func TestJobKeptAtItsBoundFitsAChunk(t *testing.T) {
	long := strings.Repeat("p", api.MaxKeyLen-8)
	for _, c := range []struct {
		name, prefix string
		suffix       int // hex digits after the prefix
	}{{"longest keys", long, 8}, {"shortest keys", "", 4}} {
		t.Run(c.name, func(t *testing.T) {
			j := &Job{ID: math.MaxUint64, Kind: api.JobKindPrefixDelete, Prefix: c.prefix,
				Start: api.ObjectIncarnation{High: math.MaxUint64, Low: math.MaxUint64}, Cursor: c.prefix,
				Removed: math.MaxInt64, Skipped: math.MaxInt64, State: api.JobRunning, Steps: math.MaxInt64,
				Created: math.MaxInt64, Updated: math.MaxInt64}
			for i, bytes := 0, 0; ; i++ {
				k := fmt.Sprintf("%s%0*x", c.prefix, c.suffix, i)
				if bytes += api.JobKeptCost(k); bytes > api.MaxJobKeptBytes {
					break
				}
				j.Kept = append(j.Kept, api.JobKept{Key: k, Incarnation: api.ObjectIncarnation{High: math.MaxUint64, Low: math.MaxUint64 - 1}})
			}
			if len(j.Kept) >= 1<<(4*c.suffix) {
				t.Fatalf("%d keys do not fit %d hex digits", len(j.Kept), c.suffix)
			}
			data, err := jobStream(t, j)
			if err != nil {
				t.Fatalf("write of a job keeping %d keys: %.200v", len(j.Kept), err)
			}
			got, err := readAll(data)
			if err != nil {
				t.Fatalf("%.200v", err)
			}
			if len(got.jobs) != 1 || !reflect.DeepEqual(got.jobs[0], j) {
				t.Fatalf("job read back differs (%d jobs)", len(got.jobs))
			}
		})
	}
}

// A job's kept keys out of their bounds are refused by the writer: a
// finished job's, one not under the prefix after the cursor, out of order,
// one not older than the start, and more than api.MaxJobKeptBytes.
func TestWriterRefusesBadJobKept(t *testing.T) {
	inc := func(low uint64) api.ObjectIncarnation { return api.ObjectIncarnation{High: 7, Low: low} }
	job := func(state string, kept ...api.JobKept) *Job {
		return &Job{ID: 10, Kind: api.JobKindPrefixDelete, Prefix: "p/", Start: inc(10), Cursor: "p/b", State: state, Kept: kept}
	}
	var tooMany []api.JobKept
	for i, bytes := 0, 0; bytes <= api.MaxJobKeptBytes; i++ {
		k := fmt.Sprintf("p/c%08d", i)
		bytes += api.JobKeptCost(k)
		tooMany = append(tooMany, api.JobKept{Key: k, Incarnation: inc(5)})
	}
	if _, err := jobStream(t, job(api.JobRunning, api.JobKept{Key: "p/c", Incarnation: inc(5)})); err != nil {
		t.Fatalf("a good kept key refused: %v", err)
	}
	for name, j := range map[string]*Job{
		"done":           job(api.JobDone, api.JobKept{Key: "p/c", Incarnation: inc(5)}),
		"cancelled":      job(api.JobCancelled, api.JobKept{Key: "p/c", Incarnation: inc(5)}),
		"behind cursor":  job(api.JobRunning, api.JobKept{Key: "p/b", Incarnation: inc(5)}),
		"outside prefix": job(api.JobRunning, api.JobKept{Key: "q/c", Incarnation: inc(5)}),
		"out of order":   job(api.JobRunning, api.JobKept{Key: "p/d", Incarnation: inc(5)}, api.JobKept{Key: "p/c", Incarnation: inc(6)}),
		"at the start":   job(api.JobRunning, api.JobKept{Key: "p/c", Incarnation: inc(10)}),
		"legacy inc":     job(api.JobRunning, api.JobKept{Key: "p/c"}),
		"over the bound": job(api.JobPausedRegistryFull, tooMany...),
	} {
		if _, err := jobStream(t, j); err == nil {
			t.Errorf("%s: writer took kept keys %d..", name, len(j.Kept))
		}
	}
}
