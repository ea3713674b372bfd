// Command mkimage writes sexton's container image as a tarball that
// `docker load` accepts, without a Docker daemon (make image).
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"sexton/deploy/check/image"
)

func main() {
	bin := flag.String("bin", "", "static linux sexton binary (CGO_ENABLED=0)")
	out := flag.String("out", "", "tarball to write")
	ref := flag.String("tag", "sexton:latest", "image reference the tarball names")
	arch := flag.String("arch", runtime.GOARCH, "GOARCH of -bin")
	version := flag.String("version", "", "version label")
	commit := flag.String("commit", "", "commit label")
	created := flag.String("created", "", "creation time, RFC 3339 (default: now)")
	flag.Parse()
	if *bin == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "mkimage: -bin and -out are required")
		os.Exit(2)
	}
	t := time.Now().UTC()
	if *created != "" {
		var err error
		if t, err = time.Parse(time.RFC3339, *created); err != nil {
			fmt.Fprintf(os.Stderr, "mkimage: -created %q: %v\n", *created, err)
			os.Exit(2)
		}
	}
	img, err := image.Build(image.Options{Binary: *bin, Arch: *arch, Version: *version, Commit: *commit, Created: t})
	if err == nil {
		err = image.Write(*out, *ref, img)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
	fmt.Println("wrote", *out, "as", *ref)
}
