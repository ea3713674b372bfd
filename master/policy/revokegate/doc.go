// Package revokegate is the master leader's gate on revoking abandoned
// puts: after the delete registry refused a revoke for want of room, the
// next waits for a backoff or for room to appear. Every decision takes the
// time as an argument and does no I/O; TestRevokeGate runs it on a fake
// clock from testdata/*.txt.
package revokegate
