// Package transport owns sexton's wire: length-prefixed frames over TCP, a
// msgpack RPC server and client with many calls in flight per connection, a
// deadline on every call, a size bound on every frame, typed *api.Error codes
// end to end, challenge-response cluster-token authentication, a pool of
// connections by address and a client that follows the Raft leader across a
// list of master addresses.
//
// It knows nothing of objects, segments or Raft: it moves method names,
// msgpack bodies and *api.Error values. See DESIGN.md for why it is built as
// it is.
package transport
