// Package dfsduties is the master leader's soft state and decisions for
// its DFS duties: reads to propose as touches (coalesced), the backoff of
// failed file ops, stray files below the root (Duties), which units
// lost their file (LostUnits) and whether a put's DFS files are ready
// (UnreadyDFSFile). None of it is replicated; a new leader starts it
// afresh. Every decision takes the time as an argument; TestDFSDuties
// runs them on a fake clock from testdata/*.txt.
package dfsduties
