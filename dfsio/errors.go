package dfsio

import "errors"

// Sentinel errors; every error of the package wraps one (errors.Is).
var (
	// ErrAdapterNotBuilt: the adapter name is known but not compiled in.
	ErrAdapterNotBuilt = errors.New("dfsio: adapter not built in")
	// ErrUnknownAdapter: MOONCAKE_DFS_FS_ADAPTER names no adapter.
	ErrUnknownAdapter = errors.New("dfsio: unknown adapter")
	// ErrBadPath: a descriptor's path is not a plain allocator file name
	// below the root (no directories, no "..").
	ErrBadPath = errors.New("dfsio: bad DFS path")
	// ErrBadRange: the value does not fit the descriptor's range.
	ErrBadRange = errors.New("dfsio: value does not fit the descriptor")
	// ErrShortIO: the file ended before the descriptor's range did.
	ErrShortIO = errors.New("dfsio: short read or write")
	// ErrFileSize: a file to create exists with another size.
	ErrFileSize = errors.New("dfsio: existing file has another size")
)
