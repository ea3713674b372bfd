package bench

import (
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"sexton/client"
)

// holderPutSync is the holders' histogram of a put group commit's durable
// steps (holder/metrics.go).
const holderPutSync = "sexton_holder_put_sync_seconds"

// putParts adds up the parts of the timed puts, as client.PutTrace
// reports them.
type putParts struct {
	mu      sync.Mutex
	methods []string // master methods in the order first seen
	master  map[string]*partSum
	holder  partSum
	total   partSum
}

type partSum struct {
	sum time.Duration
	n   int64
}

func (s *partSum) add(d time.Duration) { s.sum += d; s.n++ }

func newPutParts() *putParts { return &putParts{master: map[string]*partSum{}} }

func (p *putParts) trace() *client.PutTrace {
	return &client.PutTrace{
		MasterCall: func(method string, took time.Duration, _ error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			s, ok := p.master[method]
			if !ok {
				s = &partSum{}
				p.master[method] = s
				p.methods = append(p.methods, method)
			}
			s.add(took)
		},
		HolderWrite: func(_ string, _ int, took time.Duration, _ error) {
			p.mu.Lock()
			p.holder.add(took)
			p.mu.Unlock()
		},
	}
}

func (p *putParts) done(took time.Duration) {
	p.mu.Lock()
	p.total.add(took)
	p.mu.Unlock()
}

// line is the critical path of the mean put: each master method's round
// trips and the holder writes (a put makes them one after the other), and
// the rest, the client's own time between them.
func (p *putParts) line() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	puts := float64(p.total.n)
	if puts == 0 {
		return "put critical path: no put made"
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/puts/1e6) }
	per := func(n int64) string {
		if float64(n) == puts {
			return ""
		}
		return fmt.Sprintf(" (%.2f per put)", float64(n)/puts)
	}
	parts := []string{}
	var known time.Duration
	for _, m := range p.methods {
		s := p.master[m]
		parts = append(parts, fmt.Sprintf("%s %s%s", m, ms(s.sum), per(s.n)))
		known += s.sum
	}
	parts = append(parts, fmt.Sprintf("holder write %s%s", ms(p.holder.sum), per(p.holder.n)))
	known += p.holder.sum
	parts = append(parts, "client-side rest "+ms(p.total.sum-known))
	return fmt.Sprintf("put critical path, mean of %d puts: %s = %s (master round trips and holder writes as the client sees them; failed puts included)",
		p.total.n, strings.Join(parts, ", "), ms(p.total.sum))
}

// processCPU is this process's user and system CPU time.
func processCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// readNodes reads the given histograms' _sum/_count series and the CPU
// counter from every node of p; a node that does not answer is absent.
func (p *masterProbe) readNodes(hists []string) histogramReading {
	return p.readAll("", func(body string) map[string]float64 {
		m := parseHistograms(body, hists)
		maps.Copy(m, parseMetrics(body, []string{metricCPUSecs}))
		return m
	})
}

// cpuLine is the CPU each node of p spent per operation between two
// readings: the total and each node's share.
func cpuLine(what string, p *masterProbe, before, after histogramReading, ops int64) string {
	if len(p.addrs) == 0 {
		return ""
	}
	var total float64
	var each []string
	for _, a := range p.addrs {
		c0, ok0 := before[a][metricCPUSecs]
		c1, ok1 := after[a][metricCPUSecs]
		if !ok0 || !ok1 {
			each = append(each, a+" not read")
			continue
		}
		total += c1 - c0
		each = append(each, fmt.Sprintf("%s %.0f µs", a, (c1-c0)/float64(ops)*1e6))
	}
	return fmt.Sprintf(", %s %.0f µs (%s)", what, total/float64(ops)*1e6, strings.Join(each, ", "))
}

// holderSyncLine is the holders' own fsync time over the run, from their
// put group commit histogram.
func holderSyncLine(p *masterProbe, before, after histogramReading, writes int64) string {
	if len(p.addrs) == 0 {
		return "holder fsync: not read (give --holder-http, the holders' --http-addr list)"
	}
	var sum [2]float64
	var groups float64
	for _, a := range p.addrs {
		b, n := before[a], after[a]
		if b == nil || n == nil {
			continue
		}
		for i, step := range []string{"data", "meta"} {
			labels := fmt.Sprintf(`{step=%q}`, step)
			c := n[holderPutSync+"_count"+labels] - b[holderPutSync+"_count"+labels]
			sum[i] += n[holderPutSync+"_sum"+labels] - b[holderPutSync+"_sum"+labels]
			if i == 0 {
				groups += c
			}
		}
	}
	if groups <= 0 {
		return fmt.Sprintf("holder fsync: the holders report no put group commit (is %s in their /metrics?)", holderPutSync)
	}
	line := fmt.Sprintf("holder fsync (the holders' %s), mean per group commit: data fsync %.3f ms, metadata persist %.3f ms, over %.0f group commits",
		holderPutSync, sum[0]/groups*1e3, sum[1]/groups*1e3, groups)
	if writes > 0 {
		line += fmt.Sprintf(" (%.1f replica writes each, if only this bench wrote)", float64(writes)/groups)
	}
	return line
}

// PutOptions are bench put's settings.
type PutOptions struct {
	N                 int
	Size              Size
	Clients, Replicas int
	// MasterHTTP and HolderHTTP are the nodes' HTTP addresses, to read
	// their figures from /metrics; empty: not read.
	MasterHTTP, HolderHTTP []string
}

// Put times puts of o.N objects and takes the mean put apart: master
// round trips and holder writes from the client's PutTrace, the holders'
// fsyncs from their histograms, the Raft commit from the masters', and
// the CPU each process spent per put.
func Put(e *Env, o PutOptions) error {
	n, size, sz, clients, replicas, masterHTTP, holderHTTP := o.N, o.Size.Text, o.Size.Bytes, o.Clients, o.Replicas, o.MasterHTTP, o.HolderHTTP
	if n < 1 || clients < 1 {
		return usagef("--n and --clients must be at least 1")
	}
	masters, err := e.masterProbe(masterHTTP)
	if err != nil {
		return err
	}
	holders, err := e.masterProbe(holderHTTP)
	if err != nil {
		return err
	}
	cl, value, prefix, err := e.putSetup(sz)
	if err != nil {
		return err
	}
	parts := newPutParts()
	trace := parts.trace()

	commitBefore := masters.readHistograms()
	mastersBefore := masters.readNodes(nil)
	holdersBefore := holders.readNodes([]string{holderPutSync})
	cpu0 := processCPU()
	start := time.Now()
	_, err = e.runParallel(fmt.Sprintf("put %s", size), n, clients, 1, func(i int) error {
		ctx, c := e.ctx()
		defer c()
		t := time.Now()
		_, err := cl.Put(client.WithPutTrace(ctx, trace), fmt.Sprintf("%s%08d", prefix, i), value, client.PutOptions{Replicas: replicas})
		parts.done(time.Since(t))
		return err
	})
	elapsed := time.Since(start)
	cpu := processCPU() - cpu0
	holdersAfter := holders.readNodes([]string{holderPutSync})
	mastersAfter := masters.readNodes(nil)
	commitAfter := masters.readHistograms()

	fmt.Fprintln(e.Out, parts.line())
	parts.mu.Lock()
	puts, writes := parts.total.n, parts.holder.n
	parts.mu.Unlock()
	fmt.Fprintln(e.Out, holderSyncLine(holders, holdersBefore, holdersAfter, writes))
	masters.printCommitParts(commitBefore, commitAfter, elapsed)
	if puts > 0 {
		line := fmt.Sprintf("CPU per put: this process %.0f µs", float64(cpu)/float64(puts)/1e3)
		line += cpuLine("masters", masters, mastersBefore, mastersAfter, puts)
		line += cpuLine("holders", holders, holdersBefore, holdersAfter, puts)
		if len(masters.addrs) == 0 || len(holders.addrs) == 0 {
			line += " (give --master-http and --holder-http for the masters' and holders' CPU)"
		}
		fmt.Fprintln(e.Out, line)
	}
	return err
}
