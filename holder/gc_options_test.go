package holder

import (
	"errors"
	"strings"
	"testing"
	"time"

	"sexton/api"
)

func TestGCOptionsFromEnv(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	o, err := gcOptionsFromLookup(env())
	if err != nil || o != DefaultGCOptions() || !o.Enabled || o.Interval != 10*time.Second || o.DeletedRatio != 0.25 || o.HighWatermark != 0.9 || o.LowWatermark != 0.8 {
		t.Fatalf("defaults: %+v %v", o, err)
	}
	o, err = gcOptionsFromLookup(env(EnvGCEnable, "false", EnvGCIntervalSeconds, "2.5", EnvGCDeletedRatio, "0.5",
		EnvGCHighWatermark, "0.95", EnvGCLowWatermark, "0.7"))
	if err != nil || o.Enabled || o.Interval != 2500*time.Millisecond || o.DeletedRatio != 0.5 || o.HighWatermark != 0.95 || o.LowWatermark != 0.7 {
		t.Fatalf("overrides: %+v %v", o, err)
	}
	for _, bad := range [][]string{
		{EnvGCEnable, "maybe"},
		{EnvGCIntervalSeconds, "0"},
		{EnvGCIntervalSeconds, "ten"},
		{EnvGCDeletedRatio, "0"},
		{EnvGCDeletedRatio, "1.5"},
		{EnvGCDeletedRatio, "NaN"},
		{EnvGCDeletedRatio, "25%"},
		{EnvGCHighWatermark, "-0.1"},
		{EnvGCLowWatermark, "0.9"},  // == high
		{EnvGCHighWatermark, "0.5"}, // < low
	} {
		_, err := gcOptionsFromLookup(env(bad...))
		if !errors.Is(err, ErrBadOptions) || !strings.Contains(err.Error(), "MOONCAKE_OFFLOAD_") {
			t.Errorf("%s=%q: %v, want an error naming the setting", bad[0], bad[1], err)
		}
	}
}

func TestStartGCRefusesBadOptionsAndRunsWhenWoken(t *testing.T) {
	f := newGCFixture(t, StoreOptions{})
	bad := DefaultGCOptions()
	bad.LowWatermark = 0.95
	if err := f.s.StartGC(bad, nil); !errors.Is(err, ErrBadOptions) {
		t.Fatalf("StartGC with low ≥ high: %v", err)
	}
	o := DefaultGCOptions()
	o.Interval = time.Hour // only a tombstone can wake it in this test
	if err := f.s.StartGC(o, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.s.StartGC(o, nil); !errors.Is(err, ErrGCRunning) {
		t.Fatalf("second StartGC: %v", err)
	}
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		f.put(k, 1000)
	}
	f.kill("a", "b", "c", "d")
	deadline := time.Now().Add(20 * time.Second)
	for f.exists(bucketName(1)) || f.s.GCStats().Rounds == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the tombstones never woke the worker: %+v", f.s.GCStats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.check()
	if !f.s.GCStats().Enabled || f.s.GCStats().Status().Rounds != 1 {
		t.Fatalf("status %+v", f.s.GCStats().Status())
	}
}

func TestServiceWithoutMasterEvictsNothing(t *testing.T) {
	var svc *Service
	got, err := svc.EvictObjects([]api.ObjectRef{{Key: "k"}})
	if !errors.Is(err, ErrEvictionUnavailable) || len(got) != 0 {
		t.Fatalf("EvictObjects: %v %v", got, err)
	}
}
