// Package integration holds multi-process tests: they build the sexton
// binary, start real masters (and holders) on free loopback ports, kill
// them with SIGKILL at chosen moments, and check what survived.
package integration
