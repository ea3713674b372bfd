package fsm

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestScenarios runs every data-driven file under testdata/ (the fuzz
// corpus aside) as a subtest named after the file: a new scenario is a new
// file, nothing to register. The files say, step by step, what each one
// proves; `-run TestScenarios/<name>` runs one.
func TestScenarios(t *testing.T) {
	n := 0
	err := filepath.WalkDir("testdata", func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && e.Name() == "fuzz" {
			return filepath.SkipDir
		}
		if e.IsDir() || !strings.HasSuffix(path, ".txt") {
			return nil
		}
		n++
		name := strings.TrimSuffix(filepath.ToSlash(strings.TrimPrefix(path, "testdata"+string(filepath.Separator))), ".txt")
		t.Run(name, func(t *testing.T) { runDataDriven(t, path) })
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no scenario files under testdata/")
	}
}
