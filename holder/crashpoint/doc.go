// Package crashpoint holds named crash points: places in the code where a
// test can make the process die with SIGKILL, to prove that what is on
// disk afterwards is what the protocol promises.
//
// A point is declared once at package level:
//
//	var afterTmpFsync = crashpoint.New("tombstone.after-tmp-fsync")
//
// and hit in the code path with afterTmpFsync.Hit(). The process kills
// itself at the point whose name equals the environment variable
// SEXTON_CRASH_AT (read once, at start). When it is unset a Hit is one
// predictable branch on a bool.
//
// Crash points are test machinery: they fire only in a binary built with
// the testhooks build tag (`make test`, the integration harness's binary).
// In a release build (`make build`) Enabled is false, SEXTON_CRASH_AT is
// never read, Names is empty and every Hit compiles to nothing.
package crashpoint
