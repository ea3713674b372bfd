package dfsio

// SetOnSync installs the fdatasync observer for the power-loss tests.
func SetOnSync(f func(path string)) { onSync = f }
