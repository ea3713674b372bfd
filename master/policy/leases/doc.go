// Package leases is the master leader's read leases: a Get leases the
// incarnation it answers for a period, during which no delete task of it
// is given to a holder and no eviction drops it; a new term leases every
// incarnation until its floor, since it does not know its predecessor's
// leases. Every decision takes the time as an argument and does no I/O;
// TestLeases runs it on a fake clock from testdata/*.txt.
package leases
