// Package heapfloor keeps the Go collector from running flat out while a
// process's live heap is small.
//
// Go's collector starts a cycle once the heap has grown by GOGC percent
// (100 by default) of what the last cycle found live. A master with a
// small state, applying removes at 100,000 keys a second, collects several
// times a second. The floor was built to buy back that CPU; measured
// (docs/SCALING.md, "The collector's floor") it cut collections 13-fold but the
// masters' CPU by only 1-7 %, for three times the RSS, so `sexton master`
// leaves it off unless --gc-heap-floor is given.
//
// A floor sets the least the heap may grow between two cycles: after every
// cycle the GC percent is set so that the next starts at the live heap
// plus the larger of the floor and GOGC percent of the live heap. Once the
// live heap is larger than the floor at GOGC's rate (with GOGC=100, once it
// passes the floor itself), the percent is GOGC's own and nothing changes:
// a master holding ten million objects collects exactly as it did. What a
// floor costs is memory: up to the floor on top of the live heap while the
// heap is small. GOMEMLIMIT still holds, because the runtime collects
// whatever the percent once the process nears its limit; GOGC=off turns the
// floor off.
//
// It is process-wide, like GOGC: one Floor per process (`sexton master`
// starts one; with --gc-heap-floor 0, the default, it changes nothing).
// It never changes what a master decides, only when its collector runs,
// so it is a setting of the process and not replicated state.
package heapfloor
