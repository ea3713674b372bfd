package enum

// Name returns names[v], or unknown when v is past the table or its entry
// is empty (a value the enum does not define).
func Name[T ~uint8](names []string, v T, unknown string) string {
	if int(v) < len(names) && names[v] != "" {
		return names[v]
	}
	return unknown
}
