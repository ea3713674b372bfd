package raftio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/hashicorp/raft"

	"sexton/raftio/raftiotest"
)

// walEntry is entry i of the tests' logs: 8 KiB that name their index.
func walEntry(i uint64) *raft.Log {
	data := bytes.Repeat([]byte{byte(i)}, 8<<10)
	binary.BigEndian.PutUint64(data, i)
	return &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: data}
}

// checkWALHolds fails unless logs holds exactly entries 1..last, each
// with its own bytes, and the term stored before the disk filled.
func checkWALHolds(t *testing.T, st *LogStore, last uint64) {
	t.Helper()
	if got, err := st.Logs.LastIndex(); err != nil || got != last {
		t.Fatalf("LastIndex = %d, %v; want %d", got, err, last)
	}
	for i := uint64(1); i <= last; i++ {
		var l raft.Log
		if err := st.Logs.GetLog(i, &l); err != nil {
			t.Fatalf("GetLog(%d): %v", i, err)
		}
		if !bytes.Equal(l.Data, walEntry(i).Data) {
			t.Fatalf("entry %d holds other bytes", i)
		}
	}
	if term, err := st.Stable.GetUint64(keyCurrentTerm); err != nil || term != 7 {
		t.Fatalf("term = %d, %v; want 7", term, err)
	}
}

// TestWALRecoversFromAFullDisk: raft-wal on a file system that fills up
// refuses appends, and once space returns appends again without a
// restart, every acknowledged entry still there. Two ways to fail: the
// disk is full to the last byte, so the write that seals a segment fails;
// raft-wal rolls that write back and appends again once there is room, no
// reopen needed. Or 64 KiB are left, so that write works and the rotation
// to a new 256 KiB segment fails: unwrapped, raft-wal then answers
// "segment is sealed" to every append, for good, and walStore reopens it
// (walStore says why).
func TestWALRecoversFromAFullDisk(t *testing.T) {
	for _, tc := range []struct {
		name   string
		left   int64
		reopen bool
	}{{"seal write fails", 0, false}, {"rotation fails", 64 << 10, true}} {
		t.Run(tc.name, func(t *testing.T) { testWALRecoversFromAFullDisk(t, tc.left, tc.reopen) })
	}
}

func testWALRecoversFromAFullDisk(t *testing.T, left int64, reopen bool) {
	fault := raftiotest.NewTmpfs(t) // 8 MiB; skips unless root
	if err := os.MkdirAll(fault.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const segment = 256 << 10 // ~31 entries a segment
	st, err := OpenLogStore(fault.Dir, LogStoreOptions{Kind: LogStoreWAL, WALSegmentSize: segment}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	if err := st.Stable.SetUint64(keyCurrentTerm, 7); err != nil {
		t.Fatal(err)
	}
	var last uint64 // the last acknowledged entry
	appendNext := func() error {
		err := st.Logs.StoreLogs([]*raft.Log{walEntry(last + 1)})
		if err == nil {
			last++
		}
		return err
	}
	for range 10 {
		if err := appendNext(); err != nil {
			t.Fatal(err)
		}
	}

	fault.Fill(t)
	if left > 0 {
		fi, err := os.Stat(fault.Filler())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(fault.Filler(), fi.Size()-left); err != nil {
			t.Fatal(err)
		}
	}
	var full error
	for range 200 {
		if full = appendNext(); full != nil {
			break
		}
	}
	if full == nil {
		t.Fatalf("200 appends of 8 KiB on a full 8 MiB tmpfs all succeeded (last %d)", last)
	}
	t.Logf("full after entry %d: %v", last, full)
	// Still full: the append is refused again (no reopen without room for
	// a segment), and what was written can still be read.
	if err := appendNext(); err == nil {
		t.Fatalf("entry %d appended on a full disk", last)
	} else if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append on a still full disk: %v; want ENOSPC", err)
	} else if reopen && !strings.Contains(err.Error(), "bytes free") {
		t.Fatalf("append on a still full disk: %v; want a reopen refused for too few bytes free", err)
	}
	checkWALHolds(t, st, last)

	fault.Release(t)
	before := last
	// Across at least two more segment rotations.
	for range 80 {
		if err := appendNext(); err != nil {
			t.Fatalf("append of entry %d after space returned: %v", last+1, err)
		}
	}
	t.Logf("after space returned: entries %d..%d appended", before+1, last)
	checkWALHolds(t, st, last)
	if n := st.Reopens(); reopen != (n > 0) {
		t.Fatalf("%d reopens; want a reopen: %v", n, reopen)
	}

	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = OpenLogStore(fault.Dir, LogStoreOptions{Kind: LogStoreWAL, WALSegmentSize: segment}, nil)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	checkWALHolds(t, st, last)
}

// TestWALStoreStaysClosed: after Close every call answers that the WAL is
// closed, and an append does not reopen it.
func TestWALStoreStaysClosed(t *testing.T) {
	st, err := OpenLogStore(t.TempDir(), LogStoreOptions{Kind: LogStoreWAL, WALSegmentSize: MinWALSegmentSize}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Logs.StoreLogs([]*raft.Log{walEntry(1)}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Logs.StoreLogs([]*raft.Log{walEntry(2)}); !errors.Is(err, errWALClosed) {
		t.Fatalf("append after Close: %v, want %v", err, errWALClosed)
	}
	if _, err := st.Logs.LastIndex(); !errors.Is(err, errWALClosed) {
		t.Fatalf("LastIndex after Close: %v, want %v", err, errWALClosed)
	}
	if n := st.Reopens(); n != 0 {
		t.Fatalf("%d reopens after Close", n)
	}
}

// TestWALRestartsAfterTailTruncation: a follower whose log tail conflicts
// with a new leader's deletes that tail (DeleteRange to its last index)
// and appends the leader's entries; its raft-wal must open again after a
// restart, with the leader's entries, and hashicorp/raft must start on
// it. raft-wal v0.4.0 marked the truncated tail segment sealed without
// writing its index block, and the reopen failed ("sealed segment has no
// index block"; NewRaft panics on such a store).
func TestWALRestartsAfterTailTruncation(t *testing.T) {
	dir := t.TempDir()
	st, err := OpenLogStore(dir, LogStoreOptions{Kind: LogStoreWAL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	conf := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: "m1", Address: "m1"}}}
	entry := func(i, term uint64) *raft.Log {
		e := walEntry(i)
		e.Term = term
		return e
	}
	first := []*raft.Log{{Index: 1, Term: 1, Type: raft.LogConfiguration, Data: raft.EncodeConfiguration(conf)}}
	for i := uint64(2); i <= 10; i++ {
		first = append(first, entry(i, 1))
	}
	if err := st.Logs.StoreLogs(first); err != nil {
		t.Fatal(err)
	}
	if err := st.Stable.SetUint64(keyCurrentTerm, 2); err != nil {
		t.Fatal(err)
	}
	// The leader of term 2 has only 1..5 in common with this log.
	if err := st.Logs.DeleteRange(6, 10); err != nil {
		t.Fatal(err)
	}
	var second []*raft.Log
	for i := uint64(6); i <= 12; i++ {
		second = append(second, entry(i, 2))
	}
	if err := st.Logs.StoreLogs(second); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st, err = OpenLogStore(dir, LogStoreOptions{}, nil)
	if err != nil {
		t.Fatalf("reopen after a tail truncation: %v", err)
	}
	defer st.Close()
	if last, err := st.Logs.LastIndex(); err != nil || last != 12 {
		t.Fatalf("last index after reopen %d, %v; want 12", last, err)
	}
	for i := uint64(2); i <= 12; i++ {
		var l raft.Log
		if err := st.Logs.GetLog(i, &l); err != nil {
			t.Fatalf("entry %d after reopen: %v", i, err)
		}
		want := entry(i, 1)
		if i >= 6 {
			want = entry(i, 2)
		}
		if l.Term != want.Term || !bytes.Equal(l.Data, want.Data) {
			t.Fatalf("entry %d after reopen: term %d, want %d (or its data differs)", i, l.Term, want.Term)
		}
	}

	_, trans := raft.NewInmemTransport("m1")
	rc := raft.DefaultConfig()
	rc.LocalID = "m1"
	r, err := raft.NewRaft(rc, &raft.MockFSM{}, st.Logs, st.Stable, raft.NewInmemSnapshotStore(), trans)
	if err != nil {
		t.Fatalf("raft on the reopened WAL: %v", err)
	}
	defer func() { _ = r.Shutdown().Error() }()
	if got := r.LastIndex(); got != 12 {
		t.Fatalf("raft's last index %d, want 12", got)
	}
}
