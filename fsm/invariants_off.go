//go:build !invariants

package fsm

// invariantsEnabled is set by the "invariants" build tag, which makes Apply
// run the expensive consistency checker after every entry.
const invariantsEnabled = false

func (st *state) checkInvariants() error { return nil }
