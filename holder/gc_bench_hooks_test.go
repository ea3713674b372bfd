//go:build testhooks

package holder

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkGCThroughput merges two half-dead buckets (one bucket of live
// 256 KiB records, alternating with dead ones) and
// reports the copy rate next to seqwrite of the same bytes in the same
// directory, and the peak RSS growth during the round.
//
// cold drops the sources from the page cache first (the copy reads the
// disk); warm leaves them cached (recently written data).
func BenchmarkGCThroughput(b *testing.B) {
	for _, c := range []struct {
		name   string
		cold   bool
		bucket int64
	}{{"cold-32MiB", true, 32 << 20}, {"warm-32MiB", false, 32 << 20}, {"cold-128MiB", true, 128 << 20}} {
		b.Run(c.name, func(b *testing.B) { benchGCThroughput(b, c.cold, c.bucket) })
	}
}

func benchGCThroughput(b *testing.B, cold bool, bucketSize int64) {
	const objSize = 256 << 10
	perBucket := int(bucketSize / objSize)
	var gcRate, copyRate, diskRate, copyBound, rssGrowth, prepareMs, commitMs, cleanupMs float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		bs := newBenchStore(b, StoreOptions{BucketSizeLimit: bucketSize, BucketKeysLimit: 1000})
		bs.put(2*perBucket+1, objSize, 32) // 2 full buckets and one open
		var dead []benchObj
		for j, o := range bs.live[:2*perBucket] {
			if j%2 == 0 {
				dead = append(dead, o)
			}
		}
		bs.kill(dead)
		if cold {
			dropCache(b, bs.s.Dir())
		}
		w := newGCWorker(bs.s, DefaultGCOptions(), nil)
		bs.s.mu.Lock()
		p := bs.s.planRoundLocked(gcPolicy{ratio: DefaultGCDeletedRatio}, nil)
		bs.s.mu.Unlock()
		if p == nil || len(p.sources) != 2 {
			b.Fatalf("plan of %d sources", len(p.sources))
		}
		var copyStart, copyEnd, committed time.Time
		bs.s.hook = func(step string) {
			switch step {
			case hookGCAfterPrepare:
				copyStart = time.Now()
			case hookGCBeforeCommit:
				copyEnd = time.Now()
			case hookGCAfterCommit:
				committed = time.Now()
			}
		}
		haveHWM := resetPeakRSS()
		rssBefore := rssKiB("VmRSS")
		b.StartTimer()
		start := time.Now()
		if err := w.runRound(p); err != nil {
			b.Fatal(err)
		}
		el := time.Since(start)
		b.StopTimer()
		prepareMs += float64(copyStart.Sub(start).Microseconds()) / 1e3
		commitMs += float64(committed.Sub(copyEnd).Microseconds()) / 1e3
		cleanupMs += float64(time.Since(committed).Microseconds()) / 1e3
		copyRate += float64(p.live) / copyEnd.Sub(copyStart).Seconds()
		if haveHWM {
			rssGrowth = max(rssGrowth, float64(rssKiB("VmHWM")-rssBefore)/1024)
		}
		gcRate += float64(p.live) / el.Seconds()
		diskRate += seqWrite(b, bs.s.Dir(), p.live)
		copyBound += seqCopy(b, bs.s.Dir(), p.live)
		b.SetBytes(p.live)
		bs.s.Close()
		b.StartTimer()
	}
	b.ReportMetric(gcRate/float64(b.N)/1e6, "round-MB/s")
	b.ReportMetric(copyRate/float64(b.N)/1e6, "copy-MB/s")
	b.ReportMetric(diskRate/float64(b.N)/1e6, "seqwrite-MB/s")
	b.ReportMetric(100*copyRate/diskRate, "copy/seqwrite-%")
	b.ReportMetric(copyBound/float64(b.N)/1e6, "seqcopy-MB/s")
	b.ReportMetric(100*copyRate/copyBound, "copy/seqcopy-%")
	b.ReportMetric(100*gcRate/diskRate, "round/seqwrite-%")
	b.ReportMetric(rssGrowth, "peak-rss-growth-MiB")
	b.ReportMetric(prepareMs/float64(b.N), "prepare-ms")
	b.ReportMetric(commitMs/float64(b.N), "commit-ms")
	b.ReportMetric(cleanupMs/float64(b.N), "cleanup-ms")
}

// dropCache evicts the store's files from the page cache, so the GC reads
// its sources from the disk as it would hours after they were written.
func dropCache(b *testing.B, dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		f.Close()
	}
}

// seqWrite is the disk's own sequential write throughput as the GC sees
// it: n bytes written through one 1 MiB buffer into a new file in dir, then
// fsynced. Returns bytes per second.
func seqWrite(b *testing.B, dir string, n int64) float64 {
	f, done := scratchFile(b, dir, "seqwrite.tmp")
	defer done()
	buf := bytes.Repeat([]byte{0x5a}, gcCopyBufferSize)
	start := time.Now()
	for off := int64(0); off < n; off += int64(len(buf)) {
		if _, err := f.WriteAt(buf[:min(int64(len(buf)), n-off)], off); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	return float64(n) / time.Since(start).Seconds()
}

// seqCopy is what any single-buffer copy can do on this disk: n bytes
// written, fsynced and dropped from the page cache, then read back through
// one 1 MiB buffer into a second file that is fsynced. Returns bytes per
// second of the copy.
func seqCopy(b *testing.B, dir string, n int64) float64 {
	seqWrite(b, dir, 0) // warm the path
	f, closeSrc := scratchFile(b, dir, "seqcopy-src.tmp")
	defer closeSrc()
	buf := bytes.Repeat([]byte{0x3c}, gcCopyBufferSize)
	for off := int64(0); off < n; off += int64(len(buf)) {
		if _, err := f.WriteAt(buf[:min(int64(len(buf)), n-off)], off); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	g, closeDst := scratchFile(b, dir, "seqcopy-dst.tmp")
	defer closeDst()
	start := time.Now()
	for off := int64(0); off < n; off += int64(len(buf)) {
		chunk := buf[:min(int64(len(buf)), n-off)]
		if _, err := f.ReadAt(chunk, off); err != nil {
			b.Fatal(err)
		}
		if _, err := g.WriteAt(chunk, off); err != nil {
			b.Fatal(err)
		}
	}
	if err := g.Sync(); err != nil {
		b.Fatal(err)
	}
	return float64(n) / time.Since(start).Seconds()
}

// rssKiB reads a field (VmRSS, VmHWM) of /proc/self/status.
func rssKiB(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return -1
}

// resetPeakRSS makes VmHWM start again from the current RSS (Linux ≥ 4.0).
func resetPeakRSS() bool { return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil }

// scratchFile creates (or truncates) name in dir; done closes and removes
// it.
func scratchFile(b *testing.B, dir, name string) (*os.File, func()) {
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	return f, func() {
		f.Close()
		os.Remove(path)
	}
}
