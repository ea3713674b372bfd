// Package liveness is the master leader's view of which holders are
// alive: a holder is live while its last heartbeat is within the TTL, and
// its heartbeat's space figures are what placement weighs. Every decision
// takes the time as an argument and does no I/O; TestLiveness runs it on
// a fake clock from testdata/*.txt.
package liveness
