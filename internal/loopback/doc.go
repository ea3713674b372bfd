// Package loopback picks free loopback addresses for processes the module
// starts on its own: the dev cluster and the Raft bench.
package loopback
