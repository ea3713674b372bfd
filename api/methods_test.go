package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every RPC method constant is named after the string sent on the wire
// (MethodX = "X"), so a name in a log line or a packet capture is the name
// in the code.
func TestMethodNamesAreWireNames(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(node ast.Node) bool {
			vs, ok := node.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Method") || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				wire, _ := strconv.Unquote(lit.Value)
				n++
				if name.Name != "Method"+wire {
					t.Errorf("%s: %s sends %q; name it Method%s", f, name.Name, wire, wire)
				}
			}
			return true
		})
	}
	if n < 30 {
		t.Fatalf("found only %d method constants", n)
	}
}
