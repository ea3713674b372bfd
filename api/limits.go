package api

// Limits on values that come from outside. Every decoder checks them before
// allocating.
const (
	// MaxKeyLen bounds an object key in bytes.
	MaxKeyLen = 4096
	// MaxTenantLen bounds a tenant name.
	MaxTenantLen = 256
	// MaxBatchKeys bounds the keys of one BatchGet, Exist or BatchRemove.
	MaxBatchKeys = 4096
	// MaxFetchLimit bounds the tasks of one FetchLocalDeleteTasks answer.
	MaxFetchLimit = 256
	// MaxReconcilePage bounds the refs of one reconcile page.
	MaxReconcilePage = 4096
	// MaxReplicas bounds the replicas of one object.
	MaxReplicas = 16
	// MaxIDLen bounds segment ids, client ids, pool names and endpoints.
	MaxIDLen = 256
	// MaxCapabilities bounds the capabilities a segment may advertise.
	MaxCapabilities = 32
	// DefaultTenant is the tenant of a put that names none.
	DefaultTenant = "default"
)

// PageLimit is the size of a page a request asks limit of, where max
// bounds it: limit, or max when limit is not positive or above max.
func PageLimit(limit, max int) int {
	if limit <= 0 || limit > max {
		return max
	}
	return limit
}

// ValidKey reports whether key can name an object: non-empty, bounded, and
// free of NUL bytes (holders use keys in file metadata and logs).
func ValidKey(key string) error {
	if key == "" {
		return Errorf(CodeInvalidKey, "empty key")
	}
	if len(key) > MaxKeyLen {
		return Errorf(CodeInvalidKey, "key of %d bytes exceeds %d", len(key), MaxKeyLen)
	}
	for i := 0; i < len(key); i++ {
		if key[i] == 0 {
			return Errorf(CodeInvalidKey, "key contains a NUL byte")
		}
	}
	return nil
}
