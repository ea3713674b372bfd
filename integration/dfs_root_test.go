package integration

import (
	"os"
	"strings"
	"testing"
	"time"
)

// Fault 6: a DFS root that is not mounted when a leader starts (an empty
// directory where the DFS should be) must not make every DFS file look
// lost. The leader refuses its DFS duties, says so loudly, marks nothing
// lost, and resumes when the root is back; the object is served again.
func TestDFSUnmountedRootMarksNothingLost(t *testing.T) {
	root, env, c := startDFSCluster(t, 1)
	cl := c.client(0)
	dfsPut(t, c, env, "root/k", value("k", 100))
	m := c.nodes[0]
	m.kill()
	away := root + ".away"
	if err := os.Rename(root, away); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(root, 0o755); err != nil { // the bare mount point
		t.Fatal(err)
	}
	m.start()
	c.waitLeader(30 * time.Second)
	deadline := time.Now().Add(20 * time.Second)
	for log := m.logText(); !strings.Contains(log, "DFS ROOT UNUSABLE") && !strings.Contains(log, "DFS FILE MISSING"); log = m.logText() {
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // room for a wrong DFSMarkLost to commit
	if st := dfsStatus(t, cl); st.Lost != 0 {
		t.Fatalf("lost units %d while the root was unmounted, want 0", st.Lost)
	}
	if strings.Contains(m.logText(), "DFS FILE MISSING") {
		t.Fatal("a file was judged missing under an unusable root")
	}
	if !strings.Contains(m.logText(), "DFS ROOT UNUSABLE") {
		t.Fatal("the leader did not report the unusable DFS root")
	}
	if _, err := os.Stat(root + "/.sexton_dfs_root"); !os.IsNotExist(err) {
		t.Fatalf("the leader marked the bare mount point as the cluster's root: %v", err)
	}
	// Mount it back: the duties resume and the object reads back.
	if err := os.Remove(root); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(away, root); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(20 * time.Second)
	for !strings.Contains(m.logText(), "DFS root usable again") {
		if time.Now().After(deadline) {
			t.Fatal("the leader did not resume its DFS duties")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := dfsGet(t, c, env, "root/k"); string(got) != string(value("k", 100)) {
		t.Fatal("the object did not read back after the root came back")
	}
	if st := dfsStatus(t, cl); st.Lost != 0 {
		t.Fatalf("lost units %d, want 0", st.Lost)
	}
}
