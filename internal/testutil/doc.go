// Package testutil holds what the module's tests share: polling for a
// condition (WaitFor), fetching a URL (HTTPGet), a fake peer that serves
// one connection by hand (AcceptOnce), throwaway certificate authorities
// and node certificates (CA, NewCAs) and rolling a node's files onto new
// ones (OverwriteTLSFiles), the loop of concurrent client workers the
// integration tests drive (RunWorkers), a background call at an interval
// (Every), a flipped byte in a file (FlipMiddleBits) and a directory's
// files with their bytes (DirContents).
//
// Only tests import it (internal/layering checks this), and it imports no
// node package, so any package's tests can use it without a cycle.
package testutil
