// Package testutil holds what the module's tests share: polling for a
// condition (WaitFor), fetching a URL (HTTPGet), throwaway certificate
// authorities and node certificates (CA, NewCAs), and the loop of
// concurrent client workers the integration tests drive (RunWorkers), and
// a flipped byte in a file (FlipMiddleBits).
//
// Only tests import it (internal/layering checks this), and it imports no
// node package, so any package's tests can use it without a cycle.
package testutil
