package main

import (
	"fmt"

	"sexton/holder/crashpoint"
)

func runDebug(args []string) error {
	if len(args) != 1 || args[0] != "crash-points" {
		return usagef("debug crash-points")
	}
	for _, n := range crashpoint.Names() {
		fmt.Println(n)
	}
	return nil
}
