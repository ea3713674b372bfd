package dfsalloc

import (
	"fmt"
	"math"
	"strconv"
)

// MaxBucketID is the largest bucket id that still has a 16-digit name.
// Ids are never reused, so running out is refused (ErrNoSpace) rather than
// wrapping; at one bucket a second it takes 300 million years.
const MaxBucketID = 9_999_999_999_999_999

// BucketPath is the file of bucket id, relative to the DFS root.
func BucketPath(id uint64) string { return fmt.Sprintf("bucket_%016d.data", id) }

// ShardPath is the file of shard n of count shards, relative to the DFS
// root. The number has two digits, or as many as count-1 needs when count
// is above 100 (dfs_shard_007.data with 128 shards), so the names of one
// configuration sort in shard order.
func ShardPath(n, count int) string {
	width := len(strconv.Itoa(count - 1))
	if width < 2 {
		width = 2
	}
	return fmt.Sprintf("dfs_shard_%0*d.data", width, n)
}

// ShardOf is the shard of key: FNV-1a 64 of the key's bytes modulo count.
// It is part of the on-disk contract (a key's shard never changes for a
// given count), so it must never change.
func ShardOf(key string, count int) int {
	const offset64, prime64 = 14695981039346656037, 1099511628211
	h := uint64(offset64)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= prime64
	}
	return int(h % uint64(count))
}

// alignUp rounds size up to a multiple of alignment (a power of two). An
// empty value still takes one aligned unit, so every entry has a distinct,
// non-empty range. size must be in [0, capacity], which the callers check.
func alignUp(size, alignment int64) int64 {
	if size == 0 {
		return alignment
	}
	return (size + alignment - 1) &^ (alignment - 1)
}

// satAdd is now+d for a deadline, saturating instead of wrapping: a
// garbage now far in the future must not make a deadline lie in the past.
func satAdd(now, d int64) int64 {
	if now > math.MaxInt64-d {
		return math.MaxInt64
	}
	return now + d
}

// satMul is n×size for a total capacity, saturating at MaxInt64 (a valid
// configuration may name more bytes than an int64 holds).
func satMul(n int, size int64) int64 {
	if n > 0 && size > math.MaxInt64/int64(n) {
		return math.MaxInt64
	}
	return int64(n) * size
}
