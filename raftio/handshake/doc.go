// Package handshake is the wire framing of the Raft stream's token
// handshake (docs/DESIGN.md §10, raftio/DESIGN.md): the magic, the nonce and proof lengths,
// and how a server id is written and read. raftio speaks the handshake
// with it; raftiotest's relay replays it byte by byte with the same
// definitions, so the two cannot drift apart.
package handshake
