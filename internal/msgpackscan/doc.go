// Package msgpackscan walks msgpack bytes without decoding them, to check
// that every length they claim is backed by bytes actually present and
// within the caller's bounds, before a reflecting decoder (which allocates
// whatever a length claims) is let near them. It is how sexton bounds every
// size read from the network or the disk, and the only such walker: fsm
// walks each log entry's body with it, transport each frame, snapshot each
// opaque record, the holder each of its checksummed files, all with one
// depth limit (MaxDepth).
package msgpackscan
