package raftio

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

	"sexton/internal/testport"
)

// ports is this package's own range (testport.Range: one per package).
var ports = testport.Range{Lo: 18000, Hi: 19000}

func freeAddr(t testing.TB) string {
	t.Helper()
	return ports.Addr(t)
}

func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// relayLayer is the stream layer of an intruder who receives a master's
// own Raft dials (its address is in the master's configuration) and
// relays them: each Dial connects to the target, passes the target's
// challenge to a fresh dial of the victim's, and passes the victim's
// proof back to the target, ids swapped when swap is set.
type relayLayer struct {
	net.Listener // the intruder transport's own, unused
	dials        chan relayedDial
	swap         bool
}

type relayedDial struct {
	c  net.Conn
	at time.Time
}

// newRelayLayer receives the victim's dials on ghost.
func newRelayLayer(t *testing.T, ghost net.Listener, swap bool) *relayLayer {
	t.Helper()
	own, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relayLayer{Listener: own, dials: make(chan relayedDial, 64), swap: swap}
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
func (r *relayLayer) victimDial(timeout time.Duration) (net.Conn, error) {
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

func (r *relayLayer) Dial(a raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
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
	hello := make([]byte, len(raftAuthMagic)+raftNonceLen)
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
	head := make([]byte, len(raftAuthMagic)+raftNonceLen)
	if _, err := io.ReadFull(v, head); err != nil {
		return nil, err
	}
	dialer, err := readID(v)
	if err != nil {
		return nil, err
	}
	target, err := readID(v)
	if err != nil {
		return nil, err
	}
	mac := make([]byte, raftMACLen)
	if _, err := io.ReadFull(v, mac); err != nil {
		return nil, err
	}
	if r.swap {
		dialer, target = target, dialer
	}
	msg := append(head, byte(len(dialer)))
	msg = append(append(msg, dialer...), byte(len(target)))
	msg = append(append(msg, target...), mac...)
	if _, err := c.Write(msg); err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(c, make([]byte, raftMACLen)); err != nil {
		return nil, fmt.Errorf("the target refused the relayed proof: %w", err)
	}
	_ = c.SetDeadline(time.Time{})
	ok = true
	return c, nil
}

// tmpfsFault is a small tmpfs for a store's dir, filled by a filler file.
type tmpfsFault struct {
	dir string
}

func newTmpfsFault(t *testing.T) *tmpfsFault {
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
	return &tmpfsFault{dir: filepath.Join(dir, "data")}
}

func (f *tmpfsFault) filler() string { return filepath.Join(filepath.Dir(f.dir), "filler") }

// fill writes the filler file until the file system refuses.
func (f *tmpfsFault) fill(t *testing.T) {
	t.Helper()
	fh, err := os.Create(f.filler())
	if err != nil {
		t.Fatalf("filler: %v", err)
	}
	defer fh.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := fh.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", f.filler(), err)
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
	free, _, _ := DirSpace(f.dir)
	t.Logf("tmpfs filled: %d bytes free", free)
}

func (f *tmpfsFault) release(t *testing.T) {
	t.Helper()
	if err := os.Remove(f.filler()); err != nil {
		t.Fatalf("remove filler: %v", err)
	}
}

// errInjectedENOSPC is what faultyStore's writes fail with while full.
var errInjectedENOSPC = fmt.Errorf("injected: %w", syscall.ENOSPC)

// faultyStore fails log writes with ENOSPC while full; with allWrites,
// stable store writes too.
type faultyStore struct {
	raft.LogStore
	raft.StableStore
	full      *atomic.Bool
	allWrites bool
}

func (s *faultyStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }
func (s *faultyStore) StoreLogs(l []*raft.Log) error {
	if s.full.Load() {
		return errInjectedENOSPC
	}
	return s.LogStore.StoreLogs(l)
}
func (s *faultyStore) DeleteRange(a, b uint64) error {
	if s.full.Load() {
		return errInjectedENOSPC
	}
	return s.LogStore.DeleteRange(a, b)
}
func (s *faultyStore) Set(k, v []byte) error {
	if s.allWrites && s.full.Load() {
		return errInjectedENOSPC
	}
	return s.StableStore.Set(k, v)
}
func (s *faultyStore) SetUint64(k []byte, v uint64) error {
	if s.allWrites && s.full.Load() {
		return errInjectedENOSPC
	}
	return s.StableStore.SetUint64(k, v)
}
