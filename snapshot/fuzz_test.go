package snapshot

import (
	"bytes"
	"os"
	"reflect"
	"testing"
)

// FuzzRead: no input makes Read panic or allocate without bound (every
// length is checked before allocating, and the fuzzer's memory limit would
// catch a slip); Inspect agrees with Read; and whatever reads cleanly
// writes back and reads again as the same contents.
func FuzzRead(f *testing.F) {
	for _, p := range []string{golden140, golden140Closed, golden130, golden120, golden110, golden100} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add(sections110(newStream(f, fixtureHeader)).done())
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := readAll(data)
		_, _, ierr := Inspect(bytes.NewReader(data))
		if (err == nil) != (ierr == nil) {
			t.Fatalf("Read says %v, Inspect says %v", err, ierr)
		}
		if err != nil || got.header.Format == Format100 {
			return
		}
		c := &contents{header: got.header, state: *got.states[0], dfs: got.dfs}
		for _, s := range got.sessions {
			c.sessions = append(c.sessions, *s)
		}
		for _, o := range got.objects {
			c.objects = append(c.objects, *o)
		}
		for _, s := range got.segments {
			c.segments = append(c.segments, *s)
		}
		for _, task := range got.tasks {
			c.tasks = append(c.tasks, *task)
		}
		again, err := readAll(writeContents(t, c))
		if err != nil {
			t.Fatalf("rewritten snapshot does not read: %v", err)
		}
		if len(again.objects) != len(got.objects) || len(again.tasks) != len(got.tasks) || len(again.dfs) != len(got.dfs) || len(again.sessions) != len(got.sessions) {
			t.Fatal("rewritten snapshot holds other records")
		}
	})
}

// FuzzDecodeRecord feeds arbitrary bytes straight to every record decoder,
// past the checksums that keep FuzzRead's mutations from reaching them:
// none may panic or allocate beyond the input's size, and an object that
// decodes re-encodes to bytes that decode to the same object.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(encodeRec(f, validObject()))
	for _, o := range fixtureObjects() {
		f.Add(encodeRec(f, o))
	}
	for _, s := range fixtureSegments() {
		f.Add(encodeRec(f, s))
	}
	f.Add(encodeRec(f, fixtureTasks()[0]))
	f.Add(encodeRec(f, fixtureState()))
	f.Add(encodeRec(f, fixtureState120()))
	f.Add(encodeRec(f, fixtureSegments120()[0]))
	f.Add(encodeRec(f, fixtureState140()))
	f.Add(encodeRec(f, fixtureState140Closed()))
	f.Add(encodeRec(f, fixtureSegments140()[0]))
	f.Add(encodeRec(f, fixtureJobs140()[0]))
	for _, s := range fixtureSessions120() {
		f.Add(encodeRec(f, s))
	}
	f.Add(encodeRec(f, fixtureObjects100()[1]))
	f.Add(encodeRec(f, fixtureSegments100()[0]))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, format := range []string{Format140, Format130, Format120, Format110, Format100} {
			for _, s := range formatSpecs[format] {
				mr := &mpReader{b: data, in: &interner{}}
				for mr.remaining() > 0 {
					if _, err := s.get(mr, format); err != nil {
						break
					}
				}
			}
		}
		var o Object
		if decodeObject(&mpReader{b: data}, &o, nil, Format140) != nil {
			return
		}
		var again Object
		if err := decodeObject(&mpReader{b: appendObject(nil, &o)}, &again, nil, Format140); err != nil {
			t.Fatalf("re-encoded object does not decode: %v", err)
		}
		if !reflect.DeepEqual(o, again) {
			t.Fatalf("re-encoded object differs:\n%+v\n%+v", o, again)
		}
	})
}
