package testutil

import (
	"io"
	"net/http"
	"testing"
)

// HTTPGet returns the status and body of GET url through cl
// (http.DefaultClient when nil), failing the test when the request or
// the read of the body fails.
func HTTPGet(t testing.TB, cl *http.Client, url string) (int, string) {
	t.Helper()
	if cl == nil {
		cl = http.DefaultClient
	}
	resp, err := cl.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", url, err)
	}
	return resp.StatusCode, string(b)
}
