//go:build testhooks

package holder

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// durabilityAudit is the durability audit (DESIGN.md, "Durability
// audit") as data: for every sync site, what its fsync protects and the
// power-loss test (a -test.run pattern) that fails when the site is left
// out. TestDurabilityAudit proves each row.
var durabilityAudit = map[string]struct{ protects, test string }{
	"put.data":                {"an acknowledged large put's value bytes", "^TestPowerLossPut$/^1-before-large$/^after-return$"},
	"put.journal":             {"an acknowledged put's journal record", "^TestPowerLossPut$/^1-before$/^after-return$"},
	"put.meta-tmp":            {"the content of a new bucket's first .meta", "^TestPowerLossPut$/^2-before$/^after-return$"},
	"put.meta-dir":            {"a new bucket's first .meta rename (and its files' entries)", "^TestPowerLossPut$/^2-before$/^after-return$"},
	"open.journal-dir":        {"the entry of the journal an open created for a bucket written without one", "^TestPowerLossMainFormatPut$/^after-put$"},
	"compact.data":            {"journaled values in the bucket file before the journal lets go of them", "^TestPowerLossCompact$/^after-return$"},
	"compact.meta-tmp":        {"the content of a compaction's .meta", "^TestPowerLossCompact$/^after-return$"},
	"compact.meta-dir":        {"a compaction's .meta rename before the emptied journal takes records", "^TestPowerLossCompact$/^after-return$"},
	"tombstone.meta-tmp":      {"the content of the tombstone's .meta", "^TestPowerLossTombstone$/^after-return$"},
	"tombstone.meta-dir":      {"the tombstone's .meta rename", "^TestPowerLossTombstone$/^after-return$"},
	"tombstone.floor-tmp":     {"the content of the floor raised for an absent record", "^TestPowerLossTombstoneFloor$/^after-return$"},
	"tombstone.floor-dir":     {"the floor's rename before STALE_VERSION is answered", "^TestPowerLossTombstoneFloor$/^after-return$"},
	"gc.floor-tmp":            {"the content of the floor of the tombstones a round reclaims", "^TestPowerLossGC$/^merge$/^after-return$"},
	"gc.floor-dir":            {"the floor's rename before COMMITTED can persist", "^TestPowerLossReorderedGC$/^unlink$"},
	"gc.intent-prepared-tmp":  {"the content of the PREPARED intent", "^TestPowerLossGC$/^merge$/^gc.after-prepare$"},
	"gc.intent-prepared-dir":  {"PREPARED before any target file can persist", "^TestPowerLossReorderedGC$/^merge$"},
	"gc.target-data":          {"the target's copied bytes", "^TestPowerLossGC$/^merge$/^after-return$"},
	"gc.target-meta-tmp":      {"the content of the target's .meta", "^TestPowerLossGC$/^merge$/^after-return$"},
	"gc.target-meta-dir":      {"the target's .meta before COMMITTED can persist", "^TestPowerLossReorderedGC$/^merge$"},
	"gc.intent-committed-tmp": {"the content of the COMMITTED intent", "^TestPowerLossGC$/^merge$/^gc.after-commit$"},
	"gc.intent-committed-dir": {"COMMITTED before any source unlink can persist", "^TestPowerLossReorderedGC$/^merge$"},
	"gc.commit-dir-retry":     {"COMMITTED before any unlink when its own directory fsync failed", "^TestPowerLossReorderedGCFailedDirFsync$/^failed-4$"},
	"gc.unlink-dir":           {"the sources' unlinks before the intent's removal can persist", "^TestPowerLossReorderedGC$/^merge$"},
	"gc.abort-dir":            {"an aborted target's unlinks before the intent's removal can persist", "^TestPowerLossReorderedGCFailedDirFsync$/^failed-3$"},
	"gc.recovery-dir":         {"recovery's unlinks before the intent's removal can persist", "^TestPowerLossReorderedGCRecovery$"},
	"open.cleanup-dir":        {"an orphan's removal before its bucket id is used again", "^TestPowerLossReorderedPutAfterOrphan$"},
	"identity.tmp":            {"the content of the identity marker", "^TestPowerLossIdentity$"},
	"identity.dir":            {"the identity marker's rename (the segment id)", "^TestPowerLossIdentity$"},
	"segments.tmp":            {"the content of the recorded cluster segment ids", "^TestPowerLossKnownSegments$"},
	"segments.dir":            {"the rename of the recorded cluster segment ids", "^TestPowerLossKnownSegments$"},
	"space.reserve-data":      {"the space reserve's allocated bytes", "^TestPowerLossReserve$"},
	"space.reserve-dir":       {"the space reserve's entry", "^TestPowerLossReserve$"},
}

// EnvDurabilityAudit set to "all" makes TestDurabilityAudit prove every
// row (`make durability`); unset, it proves a representative few.
const envDurabilityAudit = "SEXTON_DURABILITY_AUDIT"

// TestDurabilityAudit: every sync site has a row in the audit and in
// DESIGN.md, and leaving a site out (EnvSkipSync) makes its row's
// power-loss test fail. Each run is this test binary re-executed with the
// site left out and only that test selected.
func TestDurabilityAudit(t *testing.T) {
	sites := syncSiteNames()
	design, err := os.ReadFile("DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, site := range sites {
		if _, ok := durabilityAudit[site]; !ok {
			t.Errorf("sync site %s has no row in durabilityAudit", site)
		}
		if !strings.Contains(string(design), "\n| `"+site+"` |") {
			t.Errorf("sync site %s has no row in DESIGN.md's durability audit table", site)
		}
	}
	for site := range durabilityAudit {
		if !slices.Contains(sites, site) {
			t.Errorf("durabilityAudit lists %s, which is not a sync site", site)
		}
	}
	prove := []string{"gc.target-data", "gc.intent-committed-dir"}
	if os.Getenv(envDurabilityAudit) == "all" {
		prove = sites
		// Every row's test passes with nothing left out, so its failure
		// below is the missing fsync's.
		var tests []string
		for _, row := range durabilityAudit {
			if !slices.Contains(tests, row.test) {
				tests = append(tests, row.test)
			}
		}
		for _, test := range tests {
			out, err := exec.Command(os.Args[0], "-test.run="+test, "-test.count=1").CombinedOutput()
			if err != nil || strings.Contains(string(out), "no tests to run") {
				t.Fatalf("%s with every fsync in place: %v\n%s", test, err, tail(string(out), 2000))
			}
		}
	}
	for _, site := range prove {
		row := durabilityAudit[site]
		t.Run(site, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run="+row.test, "-test.count=1")
			cmd.Env = append(os.Environ(), EnvSkipSync+"="+site)
			out, err := cmd.CombinedOutput()
			test := strings.Trim(strings.SplitN(row.test, "/", 2)[0], "^$")
			if err == nil || !strings.Contains(string(out), "--- FAIL: "+test) {
				t.Fatalf("with %s left out, %s did not fail (%v):\n%s", site, row.test, err, tail(string(out), 2000))
			}
			if strings.Contains(string(out), "no tests to run") {
				t.Fatalf("%s selects no test", row.test)
			}
		})
	}
}

// Every fsync in the store's code is a sync site: no .Sync() or
// .SyncDir( call outside syncsites.go, so the audit's table is complete.
func TestEveryFsyncIsASyncSite(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "syncsites.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "Sync" || sel.Sel.Name == "SyncDir") {
					t.Errorf("%s: %s call outside a sync site (syncsites.go)", fset.Position(call.Pos()), sel.Sel.Name)
				}
			}
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("only %d source files checked", checked)
	}
}

// syncSiteNames lists every registered sync site, sorted.
func syncSiteNames() []string {
	syncSitesMu.Lock()
	defer syncSitesMu.Unlock()
	return slices.Sorted(maps.Keys(syncSites))
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
