package holder

import (
	"fmt"
	"os"

	"sexton/api"
)

// Start is the holder command's holder: it opens the store in dir
// (created if missing) with the options of the environment
// (OptionsFromEnv), failing closed on anything it does not understand,
// starts following the master with cfg, and starts the GC with gc, the
// service as its evictor. metadataReserve < 0 means MetadataReserveFor
// the bucket keys limit.
func Start(dir string, cfg ServiceConfig, gc GCOptions, metadataReserve int64) (*Service, *Store, error) {
	opts, err := OptionsFromEnv()
	if err != nil {
		return nil, nil, err
	}
	opts.Logger = cfg.Logger
	opts.MetadataReserve = metadataReserve
	if metadataReserve < 0 {
		keys := opts.BucketKeysLimit
		if keys == 0 {
			keys = DefaultBucketKeysLimit
		}
		opts.MetadataReserve = MetadataReserveFor(keys)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	store, err := OpenStore(dir, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("holder %s: %w", dir, err)
	}
	svc, err := StartService(store, cfg)
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	// The Service is the evictor: live data goes only after the master agrees.
	if err := store.StartGC(gc, svc); err != nil {
		svc.Close()
		store.Close()
		return nil, nil, err
	}
	svc.SetGCStatus(func() api.GCStatus { return store.GCStats().Status() })
	return svc, store, nil
}
