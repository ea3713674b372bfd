package transport

import "errors"

// Package-level sentinels for failures that are not an *api.Error the peer
// sent. Errors returned by Call are always (or wrap) an *api.Error; these
// are for the server's lifecycle.
var (
	// ErrServerClosed is returned by Serve after Close.
	ErrServerClosed = errors.New("transport: server closed")
)
