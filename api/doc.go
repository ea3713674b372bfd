// Package api is the vocabulary shared by sexton's masters, holders and
// clients: object incarnations, replica descriptors, local-delete tasks and
// their ack outcomes, typed error codes, and the request and response bodies
// of every RPC.
//
// It is a leaf: it imports nothing of sexton's and holds no behaviour beyond
// small value methods, so every other package can depend on it without
// dragging in Raft, the network or the disk.
package api
