package layering

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Package is one package's path relative to the module and the module
// packages it imports (relative too).
type Package struct {
	Path    string
	Imports []string
}

// LayerOf is the layer of path in layers, or -1 when no entry names it.
func LayerOf(layers [][]string, path string) int {
	for i, layer := range layers {
		for _, p := range layer {
			if sub, ok := strings.CutSuffix(p, "/..."); ok {
				if strings.HasPrefix(path, sub+"/") {
					return i
				}
			} else if path == p {
				return i
			}
		}
	}
	return -1
}

// Check reports every package that layers do not place and every import
// of a higher layer's package, sorted.
func Check(layers [][]string, pkgs []Package) []string {
	var problems []string
	for _, p := range pkgs {
		from := LayerOf(layers, p.Path)
		if from < 0 {
			problems = append(problems, fmt.Sprintf("%s is in no layer of the table (internal/layering.Layers): add it where it belongs", p.Path))
			continue
		}
		for _, imp := range p.Imports {
			to := LayerOf(layers, imp)
			if to < 0 {
				problems = append(problems, fmt.Sprintf("%s imports %s, which is in no layer of the table (internal/layering.Layers): add it where it belongs", p.Path, imp))
			} else if to > from {
				problems = append(problems, fmt.Sprintf("%s (layer %d) imports %s (layer %d): a package imports only its own layer or lower ones; move the code that needs %s up, or what it needs down", p.Path, from, imp, to, imp))
			}
		}
	}
	sort.Strings(problems)
	return problems
}

// CheckTestOnly reports every package that imports one of testOnly,
// sorted; pkgs carry their non-test imports only.
func CheckTestOnly(testOnly []string, pkgs []Package) []string {
	var problems []string
	for _, p := range pkgs {
		for _, imp := range p.Imports {
			if slices.Contains(testOnly, imp) {
				problems = append(problems, fmt.Sprintf("%s imports %s, which only tests may import (internal/layering.TestOnly): move what it needs out of the test support", p.Path, imp))
			}
		}
	}
	sort.Strings(problems)
	return problems
}
