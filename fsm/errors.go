package fsm

import "errors"

// Fatal decode errors. Apply returns one of these (wrapped with detail that
// names the command type and version) when an entry cannot be read; the
// master halts on them rather than skipping the entry, and the FSM's state
// and applied index stay as they were.
var (
	// ErrUnknownCommand: the entry's type byte names no command.
	ErrUnknownCommand = errors.New("fsm: unknown command type")
	// ErrUnknownVersion: the body's "v" is not a schema version this build
	// knows; it is never read as the nearest known one.
	ErrUnknownVersion = errors.New("fsm: unknown command schema version")
	// ErrCorruptCommand: truncated, trailing or malformed bytes, unknown
	// fields, or a size beyond the limits of api/limits.go.
	ErrCorruptCommand = errors.New("fsm: corrupt command")
	// ErrCorruptSnapshot: a snapshot stream decoded but its records are not
	// a consistent state (duplicates, order, dangling references).
	ErrCorruptSnapshot = errors.New("fsm: inconsistent snapshot")
)
