// Command del is the etcd side of sexton's `bench remove`: it fills an
// etcd cluster with --keys keys (64 per Txn, not timed), then deletes
// them from --clients goroutines sharing one client, one key per Delete
// (--batch 1) or --batch keys per Txn, and prints keys/s and the
// per-call p50/p99, as sexton's bench does.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func main() {
	endpoints := flag.String("endpoints", "127.0.0.1:23791,127.0.0.1:23792,127.0.0.1:23793", "etcd client URLs")
	keys := flag.Int("keys", 40000, "keys to create and delete")
	clients := flag.Int("clients", 16, "concurrent clients")
	batch := flag.Int("batch", 1, "keys per call (1: Delete; more: one Txn)")
	flag.Parse()
	if *keys < 1 || *clients < 1 || *batch < 1 {
		log.Fatal("--keys, --clients and --batch must be at least 1")
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(*endpoints, ","), DialTimeout: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	name := func(i int) string { return fmt.Sprintf("k/%08d", i) }
	for i := 0; i < *keys; i += 64 {
		var ops []clientv3.Op
		for j := i; j < min(i+64, *keys); j++ {
			ops = append(ops, clientv3.OpPut(name(j), "v"))
		}
		if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			log.Fatalf("fill: %v", err)
		}
	}
	var next atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	start := time.Now()
	for range *clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for {
				lo := int(next.Add(int64(*batch))) - *batch
				if lo >= *keys {
					break
				}
				t := time.Now()
				var err error
				if *batch == 1 {
					_, err = cli.Delete(ctx, name(lo))
				} else {
					var ops []clientv3.Op
					for j := lo; j < min(lo+*batch, *keys); j++ {
						ops = append(ops, clientv3.OpDelete(name(j)))
					}
					_, err = cli.Txn(ctx).Then(ops...).Commit()
				}
				if err != nil {
					log.Fatalf("delete: %v", err)
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	el := time.Since(start)
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	fmt.Printf("etcd delete (batch %d): %d keys, %d clients, %.2fs: %.0f keys/s, p50 %s, p99 %s\n",
		*batch, *keys, *clients, el.Seconds(), float64(*keys)/el.Seconds(),
		lat[len(lat)/2].Round(time.Microsecond), lat[len(lat)*99/100].Round(time.Microsecond))
}
