package main

import (
	"github.com/hashicorp/go-hclog"
)

// runHolder will run a LOCAL_DISK holder once the holder's master-follow
// loop lands.
func runHolder(args []string) error {
	return usagef("holder: not yet (the holder's master-follow loop has not landed)")
}

func startDevHolder(dir, masterAddr, addr string, log hclog.Logger) (func(), error) {
	log.Warn("dev: no holder yet; running the master alone")
	return func() {}, nil
}
