package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"sexton/client"
	"sexton/holder"
)

// A real holder on a 32 MiB tmpfs with no --capacity (so no watermarks),
// 1 MB objects in 4-record buckets and a deleted ratio of 0.5: it takes
// puts until its metadata reserve refuses them, then one object of every
// four is removed. No bucket reaches the ratio and no watermark exists,
// so only the refused puts can start GC; once they do, the dead bytes are
// reclaimed and puts are taken again. Needs root (it mounts the tmpfs).
func TestRefusedPutsStartGCOnASmallDisk(t *testing.T) {
	mnt := mountSmallDisk(t, "mounting a tmpfs needs root; holder's TestRefusedPutsStartGCWhateverTheWatermarks covers the same on a model disk")
	c := startCluster(t, 1)
	c.holderExtra = func(string) []string {
		return []string{"--capacity", "0", "--metadata-reserve", "8MiB", "--gc-deleted-ratio", "0.5", "--gc-interval", "1h"}
	}
	h := &holderNode{name: "small", dir: filepath.Join(mnt, "small"), addr: freePort(t), pool: "small"}
	h.proc = startProc(t, h.name, filepath.Join(t.TempDir(), "small.log"), []string{holder.EnvBucketKeysLimit + "=4"}, h.args(c)...)
	c.waitHolderMounted(t, h)

	put := func(i int) error { return putSmall(c, h, i) }
	stored := 0
	for ; ; stored++ {
		if err := put(stored); err != nil {
			t.Logf("put %d refused: %v", stored, err)
			break
		}
		if stored == 40 {
			t.Fatal("40 MB stored on a 32 MiB disk")
		}
	}
	if stored < 8 {
		t.Fatalf("refused after only %d puts", stored)
	}
	removed := map[int]bool{}
	for i := 0; i < stored; i += 4 {
		mustRemove(t, c, fmt.Sprintf("small/%03d", i))
		removed[i] = true
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := holderStatus(h.addr, c.token)
		if err == nil && st.Tombstoned == len(removed) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the removes never reached the holder: %+v %v", st, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	next := stored
	deadline = time.Now().Add(30 * time.Second)
	for put(next) != nil {
		if time.Now().After(deadline) {
			st, _ := holderStatus(h.addr, c.token)
			t.Fatalf("puts still refused 30 s after the removes with %d dead bytes on the disk: %+v\n%s", st.DeadBytes, st.GC, tail(h.logText(), 3000))
		}
		next++
	}
	st, err := holderStatus(h.addr, c.token)
	if err != nil || st.GC.Rounds == 0 {
		t.Fatalf("a put was taken but GC ran no round: %+v %v", st, err)
	}
	for i := 0; i < stored; i++ {
		ctx, cancel := ctxT(10 * time.Second)
		got, _, err := c.lib().Get(ctx, fmt.Sprintf("small/%03d", i))
		cancel()
		if removed[i] {
			if err == nil {
				t.Fatalf("removed small/%03d readable", i)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, smallValue(i)) {
			t.Fatalf("small/%03d after GC: %v (%d bytes)", i, err, len(got))
		}
	}
}

// The numbers with the holder's defaults: a 32 MiB tmpfs, the
// default bucket limits (every object in one bucket) and metadata
// reserve, 20 objects of 1 MB and 10 of them removed. No merge fits the
// free space, so the refused puts' GC punches the dead records out of the
// bucket, then merges it; puts are taken again. Needs root.
func TestRefusedPutsOnASmallDiskWithDefaultBuckets(t *testing.T) {
	mnt := mountSmallDisk(t, "mounting a tmpfs needs root; holder's TestRefusedPutsOnASmallDiskPunchDeadBytes is the same without a process")
	c := startCluster(t, 1)
	c.holderExtra = func(string) []string { return []string{"--capacity", "32MiB"} }
	h := &holderNode{name: "small", dir: filepath.Join(mnt, "small"), addr: freePort(t), pool: "small"}
	h.proc = startProc(t, h.name, filepath.Join(t.TempDir(), "small.log"), nil, h.args(c)...)
	c.waitHolderMounted(t, h)

	put := func(i int) error { return putSmall(c, h, i) }
	for i := 0; i < 20; i++ {
		if err := put(i); err != nil {
			t.Fatalf("put %d of 20: %v", i, err)
		}
	}
	for i := 0; i < 20; i += 2 {
		mustRemove(t, c, fmt.Sprintf("small/%03d", i))
	}
	next := 20
	deadline := time.Now().Add(30 * time.Second)
	for put(next) != nil {
		if time.Now().After(deadline) {
			st, _ := holderStatus(h.addr, c.token)
			t.Fatalf("puts still refused 30 s after the removes: %+v\n%s", st, tail(h.logText(), 3000))
		}
		next++
	}
	// The removes reach the holder one by one, so a round may run before
	// the last of them: a few dead records can be left in the merged
	// bucket, below the deleted ratio.
	deadline = time.Now().Add(30 * time.Second)
	for {
		st, err := holderStatus(h.addr, c.token)
		if err == nil && st.GC.Rounds > 0 && st.GC.BytesReclaimed > 0 && st.DeadBytes < 5_000_000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dead bytes not reclaimed: %+v %v\n%s", st.GC, err, tail(h.logText(), 6000))
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i := 1; i < 20; i += 2 {
		ctx, cancel := ctxT(10 * time.Second)
		got, _, err := c.lib().Get(ctx, fmt.Sprintf("small/%03d", i))
		cancel()
		if err != nil || !bytes.Equal(got, smallValue(i)) {
			t.Fatalf("small/%03d after GC: %v (%d bytes)", i, err, len(got))
		}
	}
}

// mountSmallDisk mounts a 32 MiB tmpfs for the test and unmounts it after;
// without root, or where mounting fails, the test is skipped saying why
// (notRoot names the test that covers the same without a mount).
func mountSmallDisk(t *testing.T, notRoot string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip(notRoot)
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (%v: %s)", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	return mnt
}

// smallValue is the 1 MB value of object i of the small-disk tests.
func smallValue(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 1_000_000) }

// putSmall puts object i (small/NNN, smallValue(i)) in h's pool.
func putSmall(c *cluster, h *holderNode, i int) error {
	ctx, cancel := ctxT(30 * time.Second)
	defer cancel()
	_, err := c.lib().Put(ctx, fmt.Sprintf("small/%03d", i), smallValue(i), client.PutOptions{Pool: h.pool})
	return err
}
