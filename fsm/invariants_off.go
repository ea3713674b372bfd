//go:build !invariants && !race

package fsm

// invariantsEnabled is set by the "invariants" build tag or by the race
// detector (so `make test`, which runs -race, has them), and makes Apply run
// the expensive consistency checker after every entry.
const invariantsEnabled = false

// InvariantsEnabled tells other packages whether this build runs the
// expensive checks (the master decodes every entry before proposing it).
const InvariantsEnabled = invariantsEnabled

func (st *state) checkInvariants() error { return nil }
