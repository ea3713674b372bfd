package dfsio

import (
	"fmt"
	"path/filepath"
	"strings"

	"sexton/api"
	"sexton/fsm/dfsalloc"
)

// Adapter names (MOONCAKE_DFS_FS_ADAPTER).
const (
	AdapterPosix = "posix"
	AdapterHF3FS = "hf3fs"
)

// Environment variables read here; the allocator's own are read by
// AllocConfigFromEnv.
const (
	EnvRoot    = "MOONCAKE_DFS_ROOT_DIR"
	EnvAdapter = "MOONCAKE_DFS_FS_ADAPTER"
	EnvFsync   = "MOONCAKE_DFS_FSYNC"
)

// Settings are one process's DFS settings.
type Settings struct {
	Root    string // cleaned absolute-or-relative path as given; "" = DFS off
	Adapter string
	Fsync   bool
	Alloc   dfsalloc.Config
}

// Enabled reports whether a DFS root is configured.
func (s Settings) Enabled() bool { return s.Root != "" }

// SettingsFromEnv reads MOONCAKE_DFS_* through getenv. DFS is off (zero
// Settings, nil error) when MOONCAKE_DFS_ROOT_DIR is unset. An unknown
// adapter or bad allocator setting is an error; hf3fs is refused here, so
// a master or client configured for it fails at start, not at first use.
func SettingsFromEnv(getenv func(string) string) (Settings, error) {
	root := strings.TrimSpace(getenv(EnvRoot))
	if root == "" {
		return Settings{}, nil
	}
	adapter := strings.TrimSpace(getenv(EnvAdapter))
	if adapter == "" {
		adapter = AdapterPosix
	}
	if err := checkAdapter(adapter); err != nil {
		return Settings{}, err
	}
	alloc, err := AllocConfigFromEnv(getenv)
	if err != nil {
		return Settings{}, err
	}
	fs := strings.TrimSpace(getenv(EnvFsync))
	return Settings{Root: filepath.Clean(root), Adapter: adapter, Fsync: fs == "1" || strings.EqualFold(fs, "true"), Alloc: alloc}, nil
}

func checkAdapter(name string) error {
	switch name {
	case AdapterPosix:
		return nil
	case AdapterHF3FS:
		return fmt.Errorf("%w: DFS adapter hf3fs is not built into sexton; use posix", ErrAdapterNotBuilt)
	}
	return fmt.Errorf("%w: %s %q (want %s)", ErrUnknownAdapter, EnvAdapter, name, AdapterPosix)
}

// Published is what a master tells clients about its DFS settings.
func (s Settings) Published(cluster dfsalloc.Config) api.DFSConfigResponse {
	return api.DFSConfigResponse{Enabled: s.Enabled(), Root: s.Root, Adapter: s.Adapter, Env: AllocEnvironment(cluster)}
}

// Compare returns nil if a client with settings s may read and write the
// DFS space the master published, else an api.CodeDFSMismatch error naming
// the first difference (root, adapter, allocator, alignment, capacity,
// shard count).
func (s Settings) Compare(m api.DFSConfigResponse) error {
	mismatch := func(what string, mine, theirs any) error {
		return api.Errorf(api.CodeDFSMismatch, "%s is %q here but %q on the master", what, mine, theirs)
	}
	switch {
	case !m.Enabled:
		return api.Errorf(api.CodeDFSMismatch, "the master has no DFS configured")
	case !s.Enabled():
		return api.Errorf(api.CodeDFSMismatch, "%s is unset here but %q on the master", EnvRoot, m.Root)
	case filepath.Clean(m.Root) != s.Root:
		return mismatch(EnvRoot, s.Root, m.Root)
	case m.Adapter != s.Adapter:
		return mismatch(EnvAdapter, s.Adapter, m.Adapter)
	}
	env := map[string]string{}
	for _, kv := range m.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	theirs, err := AllocConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		return api.Errorf(api.CodeDFSMismatch, "the master's DFS settings do not parse here: %v", err)
	}
	if err := s.Alloc.CompareShared(theirs); err != nil {
		return err // wraps api.ErrDFSMismatch and names the setting
	}
	return nil
}
