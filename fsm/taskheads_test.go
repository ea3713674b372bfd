package fsm

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// TestTaskHeadsModel runs random sets and gets of task heads against a
// plain map by key, with the hash narrowed to 0–2 bits so that keys
// collide all the time (and left whole once): every get answers what the
// model holds, every key's head is found where it was put, and check holds
// after each step.
func TestTaskHeadsModel(t *testing.T) {
	for _, mask := range []uint64{0, 1, 3, ^uint64(0)} {
		t.Run(fmt.Sprintf("mask=%x", mask), func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				h := newTaskHeads()
				h.mask = mask
				model := map[string]*task{}
				keys := rapid.SliceOfNDistinct(rapid.StringMatching(`[a-f]{1,3}`), 1, 12, rapid.ID[string]).Draw(rt, "keys")
				steps := rapid.IntRange(1, 200).Draw(rt, "steps")
				for i := range steps {
					key := rapid.SampledFrom(keys).Draw(rt, "key")
					var head *task
					if rapid.IntRange(0, 2).Draw(rt, "op") > 0 { // two sets for every clear
						head = &task{id: uint64(i), key: key}
					}
					h.set(key, head)
					if head == nil {
						delete(model, key)
					} else {
						model[key] = head
					}
					if err := h.check(); err != nil {
						rt.Fatalf("step %d: %v", i, err)
					}
					for _, k := range keys {
						if got, want := h.get(k), model[k]; got != want {
							rt.Fatalf("step %d: get(%q) = %v, want %v", i, k, got, want)
						}
					}
					if h.len() != len(model) {
						rt.Fatalf("step %d: len %d, want %d", i, h.len(), len(model))
					}
					seen := map[string]bool{}
					h.each(func(k string, head *task) {
						if seen[k] || model[k] != head {
							rt.Fatalf("step %d: each gave %q twice or a head the model does not hold", i, k)
						}
						seen[k] = true
					})
					if len(seen) != len(model) {
						rt.Fatalf("step %d: each gave %d keys, want %d", i, len(seen), len(model))
					}
				}
			})
		})
	}
}

// BenchmarkTaskHeads fills the heads of a backlog of removed keys, each
// key's task allocated as a remove allocates it, beside the string-keyed
// map the heads replace (docs/SCALING.md, "The fsm's memory and CPU").
func BenchmarkTaskHeads(b *testing.B) {
	const n = 1_000_000
	tasks := make([]*task, n)
	for i := range tasks {
		tasks[i] = &task{id: uint64(i), key: fmt.Sprintf("bench-remove-1733412345/%08d", i)}
	}
	b.Run("by-key", func(b *testing.B) {
		for b.Loop() {
			m := map[string]*task{}
			for _, t := range tasks {
				if m[t.key] == nil {
					m[t.key] = t
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/key")
	})
	b.Run("by-hash", func(b *testing.B) {
		for b.Loop() {
			h := newTaskHeads()
			for _, t := range tasks {
				if h.get(t.key) == nil {
					h.set(t.key, t)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/key")
	})
}
