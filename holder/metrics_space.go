package holder

import "github.com/prometheus/client_golang/prometheus"

// spaceCollector exports SpaceStats to Prometheus. It reads the store at
// scrape time (one statfs per scrape), so it needs no goroutine.
type spaceCollector struct {
	s                                        *Store
	free, total, capEff, reserve, held, nosp *prometheus.Desc
}

// newSpaceCollector is the holder's disk-space collector:
//
//	sexton_holder_fs_free_bytes              bytes an unprivileged writer can still allocate
//	sexton_holder_fs_total_bytes             the filesystem's size
//	sexton_holder_capacity_effective_bytes   capacity reported to the master (0 = unknown)
//	sexton_holder_space_reserve_bytes        the metadata reserve (0 = off)
//	sexton_holder_space_reserve_held         1 while .space_reserve is allocated, 0 once released
//	sexton_holder_enospc_total{path}         writes that met a full disk, by path
func newSpaceCollector(s *Store) prometheus.Collector {
	return &spaceCollector{s: s,
		free:    prometheus.NewDesc("sexton_holder_fs_free_bytes", "Bytes of the store's filesystem an unprivileged writer can still allocate (statfs f_bavail).", nil, nil),
		total:   prometheus.NewDesc("sexton_holder_fs_total_bytes", "Size of the store's filesystem in bytes (statfs).", nil, nil),
		capEff:  prometheus.NewDesc("sexton_holder_capacity_effective_bytes", "Capacity reported to the master: --capacity clamped to what the filesystem can hold for this store (0 = unknown).", nil, nil),
		reserve: prometheus.NewDesc("sexton_holder_space_reserve_bytes", "Metadata reserve: free space puts may not take, and the size of the preallocated .space_reserve (0 = off).", nil, nil),
		held:    prometheus.NewDesc("sexton_holder_space_reserve_held", "1 while .space_reserve is allocated; 0 after a full disk made the holder release it for deletion.", nil, nil),
		nosp:    prometheus.NewDesc("sexton_holder_enospc_total", "Writes that failed with ENOSPC or EDQUOT, by path (put, tombstone, floor, gc_floor, gc_intent, gc_meta, gc_data, reserve).", []string{"path"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *spaceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.free, c.total, c.capEff, c.reserve, c.held, c.nosp} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *spaceCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.SpaceStats()
	held := 0.0
	if st.ReserveHeld {
		held = 1
	}
	if st.StatfsError == "" {
		ch <- prometheus.MustNewConstMetric(c.free, prometheus.GaugeValue, float64(st.FSFreeBytes))
		ch <- prometheus.MustNewConstMetric(c.total, prometheus.GaugeValue, float64(st.FSTotalBytes))
	}
	ch <- prometheus.MustNewConstMetric(c.capEff, prometheus.GaugeValue, float64(st.CapacityEffectiveBytes))
	ch <- prometheus.MustNewConstMetric(c.reserve, prometheus.GaugeValue, float64(st.MetadataReserveBytes))
	ch <- prometheus.MustNewConstMetric(c.held, prometheus.GaugeValue, held)
	// Every known path is exported from zero, so rate() sees the first event.
	for _, p := range enospcPaths(st.ENOSPC) {
		ch <- prometheus.MustNewConstMetric(c.nosp, prometheus.CounterValue, float64(st.ENOSPC[p]), p)
	}
}
