// Command etcd is etcd 3.6's server, built from the module proxy so that
// the comparison needs no download of a release binary.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
