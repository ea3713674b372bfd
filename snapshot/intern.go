package snapshot

// interner shares the strings that repeat across a million records
// (tenants, segment ids, pools) so decoding allocates them once per
// snapshot instead of once per record. It stops growing at maxInterned
// entries, so a snapshot of all-distinct strings costs no more than
// without it.
type interner struct{ m map[string]string }

const maxInterned = 4096

func (in *interner) str(b []byte) string {
	if in == nil {
		return string(b)
	}
	if s, ok := in.m[string(b)]; ok { // no allocation for the lookup
		return s
	}
	s := string(b)
	if in.m == nil {
		in.m = make(map[string]string)
	}
	if len(in.m) < maxInterned {
		in.m[s] = s
	}
	return s
}

// strShared reads a str of at most limit bytes through the interner.
func (r *mpReader) strShared(what string, limit int) (string, error) {
	p, err := r.strBytesMax(what, limit)
	if err != nil {
		return "", err
	}
	return r.in.str(p), nil
}
