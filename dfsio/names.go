package dfsio

import (
	"fmt"
	"regexp"
)

// allocatorFile matches the only names the allocators produce.
var allocatorFile = regexp.MustCompile(`^(bucket_[0-9]{16}|dfs_shard_[0-9]{2,5})\.data$`)

// IsAllocatorFile reports whether name is a bucket or shard file name.
func IsAllocatorFile(name string) bool { return allocatorFile.MatchString(name) }

// checkPath refuses any descriptor path but a plain allocator file name, so
// a corrupt or hostile descriptor cannot reach outside the root.
func checkPath(p string) error {
	if !IsAllocatorFile(p) {
		return fmt.Errorf("%w: %q is not a bucket_*.data or dfs_shard_*.data name", ErrBadPath, p)
	}
	return nil
}

// MaxReadLen bounds one DFS read, so a corrupt descriptor cannot make a
// client allocate without limit (the default bucket capacity).
const MaxReadLen = 1 << 30
