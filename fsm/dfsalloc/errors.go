package dfsalloc

import (
	"errors"
	"fmt"

	"sexton/api"
)

// Sentinel errors. Every error the package returns wraps one of these (use
// errors.Is); errors that reach a client also wrap the api sentinel of their
// wire code (api.ErrInvalidParams, api.ErrNoSpace, api.ErrCorrupt), so
// api.CodeOf and api.AsError give the right code.
var (
	// ErrInvalidConfig: a setting is out of range; the message names it.
	ErrInvalidConfig = errors.New("dfsalloc: invalid configuration")
	// ErrInvalidRequest: an allocation request is malformed (bad key, negative
	// size, larger than a unit, batch too large). Nothing changed.
	ErrInvalidRequest = errors.New("dfsalloc: invalid request")
	// ErrNoSpace: no unit can take the request (shard full, or the bucket
	// count is at its maximum).
	ErrNoSpace = errors.New("dfsalloc: no space")
	// ErrUnknownEntry: no live entry sits at the descriptor's unit and offset.
	ErrUnknownEntry = errors.New("dfsalloc: unknown entry")
	// ErrDescriptorMismatch: an entry exists at that place but its key or
	// descriptor differs from the one given.
	ErrDescriptorMismatch = errors.New("dfsalloc: descriptor mismatch")
	// ErrNotPending: Commit of an entry that is not pending was asked with a
	// descriptor that does not match.
	ErrNotPending = errors.New("dfsalloc: entry not pending")
	// ErrUnknownUnit: the bucket or shard named does not exist (or no longer).
	ErrUnknownUnit = errors.New("dfsalloc: unknown unit")
	// ErrWrongState: the unit is not in a state that allows the operation
	// (for example ConfirmFileDeleted of a bucket that is not deleting).
	ErrWrongState = errors.New("dfsalloc: unit in wrong state")
	// ErrWrongAllocator: the operation or plan belongs to the other allocator.
	ErrWrongAllocator = errors.New("dfsalloc: wrong allocator")
	// ErrCorruptRecords: snapshot records are malformed or inconsistent;
	// Restore changed nothing.
	ErrCorruptRecords = errors.New("dfsalloc: corrupt records")
)

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %w: %s", ErrInvalidRequest, api.ErrInvalidParams, fmt.Sprintf(format, args...))
}

func noSpacef(format string, args ...any) error {
	return fmt.Errorf("%w: %w: %s", ErrNoSpace, api.ErrNoSpace, fmt.Sprintf(format, args...))
}

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: %w: %s", ErrCorruptRecords, api.ErrCorrupt, fmt.Sprintf(format, args...))
}

func errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
}
