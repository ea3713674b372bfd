// Package check holds the deployment artefacts' builders and tests: the
// container image (package image, cmd/mkimage) and the Helm chart's
// render, lint and offline schema checks (chart_test.go). It is a
// module of its own so that the Helm SDK, go-containerregistry and the
// Kubernetes API types stay out of sexton's go.mod: the binary needs
// none of them.
package check
