// Package raftiotest holds what tests of the Raft plumbing (raftio) and
// of the master that runs it (master) share: an intruder's relay of the
// token handshake, a small tmpfs that a test fills, a log and stable store
// that fails writes with ENOSPC on demand, and reading a snapshot whole.
// Only tests import it.
package raftiotest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"golang.org/x/sys/unix"

	"sexton/raftio/handshake"
)

// ReadSnap reads snapshot id of s whole.
func ReadSnap(s raft.SnapshotStore, id string) (*raft.SnapshotMeta, []byte, error) {
	m, rc, err := s.Open(id)
	if err != nil {
		return nil, nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	return m, b, err
}

// WriteSnap writes data into s as the snapshot of the given version taken
// at index and term with configuration conf (committed at confIndex), and
// returns its id.
func WriteSnap(t testing.TB, s raft.SnapshotStore, version raft.SnapshotVersion, index, term uint64, conf raft.Configuration, confIndex uint64, data []byte) string {
	t.Helper()
	_, trans := raft.NewInmemTransport("") // encodes the peers of hashicorp's meta.json
	defer trans.Close()
	sink, err := s.Create(version, index, term, conf, confIndex, trans)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	return sink.ID()
}

// RelayLayer is the stream layer of an intruder who receives a master's
// own Raft dials (its address is in the master's configuration) and
// relays them: each Dial connects to the target, passes the target's
// challenge to a fresh dial of the victim's, and passes the victim's
// proof back to the target, ids swapped when swap is set.
type RelayLayer struct {
	net.Listener // the intruder transport's own, unused
	dials        chan relayedDial
	swap         bool
}

type relayedDial struct {
	c  net.Conn
	at time.Time
}

// NewRelayLayer receives the victim's dials on ghost.
func NewRelayLayer(t *testing.T, ghost net.Listener, swap bool) *RelayLayer {
	t.Helper()
	own, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &RelayLayer{Listener: own, dials: make(chan relayedDial, 64), swap: swap}
	go func() {
		for {
			c, err := ghost.Accept()
			if err != nil {
				return
			}
			select {
			case r.dials <- relayedDial{c, time.Now()}:
			default:
				_ = c.Close()
			}
		}
	}()
	t.Cleanup(func() { _ = ghost.Close() })
	return r
}

// victimDial is a dial of the victim's fresh enough that its handshake
// has time left.
func (r *RelayLayer) victimDial(timeout time.Duration) (net.Conn, error) {
	deadline := time.After(timeout)
	for {
		select {
		case d := <-r.dials:
			if time.Since(d.at) < time.Second {
				return d.c, nil
			}
			_ = d.c.Close()
		case <-deadline:
			return nil, errors.New("the victim did not dial the relay")
		}
	}
}

func (r *RelayLayer) Dial(a raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", string(a), timeout)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = c.Close()
		}
	}()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	hello := make([]byte, len(handshake.Magic)+handshake.NonceLen)
	if _, err := io.ReadFull(c, hello); err != nil {
		return nil, err
	}
	v, err := r.victimDial(10 * time.Second)
	if err != nil {
		return nil, err
	}
	defer v.Close()
	_ = v.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := v.Write(hello); err != nil {
		return nil, err
	}
	head := make([]byte, len(handshake.Magic)+handshake.NonceLen)
	if _, err := io.ReadFull(v, head); err != nil {
		return nil, err
	}
	dialer, err := handshake.ReadID(v)
	if err != nil {
		return nil, err
	}
	target, err := handshake.ReadID(v)
	if err != nil {
		return nil, err
	}
	mac := make([]byte, handshake.MACLen)
	if _, err := io.ReadFull(v, mac); err != nil {
		return nil, err
	}
	if r.swap {
		dialer, target = target, dialer
	}
	msg := append(handshake.AppendID(handshake.AppendID(head, dialer), target), mac...)
	if _, err := c.Write(msg); err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(c, make([]byte, handshake.MACLen)); err != nil {
		return nil, fmt.Errorf("the target refused the relayed proof: %w", err)
	}
	_ = c.SetDeadline(time.Time{})
	ok = true
	return c, nil
}

// Tmpfs is a small tmpfs for a store's dir, filled by a filler file.
type Tmpfs struct {
	// Dir is the store's directory on the tmpfs (not yet made).
	Dir string
}

func NewTmpfs(t *testing.T) *Tmpfs {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=8m"); err != nil {
		t.Skipf("cannot mount a tmpfs on %s (%v)", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			// Never leave the mount behind: detach it (it goes when the
			// last file in it is closed) and report the busy unmount.
			derr := unix.Unmount(dir, unix.MNT_DETACH)
			t.Errorf("unmount %s: %v (lazy unmount: %v)", dir, err, derr)
		}
	})
	return &Tmpfs{Dir: filepath.Join(dir, "data")}
}

// Filler is the file that fills the tmpfs, beside Dir.
func (f *Tmpfs) Filler() string { return filepath.Join(filepath.Dir(f.Dir), "filler") }

// Fill writes the filler file until the file system refuses.
func (f *Tmpfs) Fill(t *testing.T) {
	t.Helper()
	fh, err := os.Create(f.Filler())
	if err != nil {
		t.Fatalf("filler: %v", err)
	}
	defer fh.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := fh.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", f.Filler(), err)
			}
			break
		}
	}
	// The last partial pages too: write byte by byte until refused.
	for {
		if _, err := fh.Write(chunk[:512]); err != nil {
			break
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Dir(f.Dir), &st); err == nil {
		t.Logf("tmpfs filled: %d bytes free", st.Bavail*uint64(st.Bsize))
	}
}

// Release removes the filler file, giving the space back.
func (f *Tmpfs) Release(t *testing.T) {
	t.Helper()
	if err := os.Remove(f.Filler()); err != nil {
		t.Fatalf("remove filler: %v", err)
	}
}

// ErrInjectedENOSPC is what FaultyStore's writes fail with while full.
var ErrInjectedENOSPC = fmt.Errorf("injected: %w", syscall.ENOSPC)

// FaultyStore fails log writes with ENOSPC while Full holds; with AllWrites,
// stable store writes too.
type FaultyStore struct {
	raft.LogStore
	raft.StableStore
	Full      *atomic.Bool
	AllWrites bool
}

func (s *FaultyStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }
func (s *FaultyStore) StoreLogs(l []*raft.Log) error {
	if s.Full.Load() {
		return ErrInjectedENOSPC
	}
	return s.LogStore.StoreLogs(l)
}
func (s *FaultyStore) DeleteRange(a, b uint64) error {
	if s.Full.Load() {
		return ErrInjectedENOSPC
	}
	return s.LogStore.DeleteRange(a, b)
}
func (s *FaultyStore) Set(k, v []byte) error {
	if s.AllWrites && s.Full.Load() {
		return ErrInjectedENOSPC
	}
	return s.StableStore.Set(k, v)
}
func (s *FaultyStore) SetUint64(k []byte, v uint64) error {
	if s.AllWrites && s.Full.Load() {
		return ErrInjectedENOSPC
	}
	return s.StableStore.SetUint64(k, v)
}
