// Package loopback serves connections and processes of one host: it picks
// free loopback addresses for processes the module starts on its own (the
// dev cluster and the Raft bench), and takes pacing off TCP connections
// between two processes of the host.
package loopback
