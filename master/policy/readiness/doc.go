// Package readiness is the master's /readyz decision (ReadyFor) from the
// facts gathered at one moment: the log store can write, a leader is
// known, a leader has finished its barrier, and the node has applied what
// it knows to be committed. TestReadiness runs it from testdata/*.txt.
package readiness
