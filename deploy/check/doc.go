// Package check holds the deployment artefacts' builders and tests: the
// container image (package image, cmd/mkimage) and its Dockerfile; the
// Helm chart rendered, linted, strict-decoded and held to the API
// server's rules offline, and refusing bad values; deploy/README.md's
// walkthrough to a TLS cluster, run offline; deploy/local/cluster.sh's
// ports; and the binary's first log line. It is a module of its own so
// that the Helm SDK, go-containerregistry and the Kubernetes API types
// stay out of sexton's go.mod: the binary needs none of them.
package check
