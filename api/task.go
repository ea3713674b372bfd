package api

import "sexton/internal/enum"

// LocalDeleteTask tells one segment to tombstone one incarnation of one key.
// A task is unique per (Segment, Key, Incarnation); ID is an FSM counter.
type LocalDeleteTask struct {
	ID          uint64            `msgpack:"id"`
	Segment     SegmentID         `msgpack:"seg"`
	Key         string            `msgpack:"k"`
	Tenant      string            `msgpack:"t,omitempty"`
	Incarnation ObjectIncarnation `msgpack:"i"`
	Created     int64             `msgpack:"c"` // leader's clock, unix nanoseconds, carried in the command
}

// AckOutcome is what a holder did with a task.
type AckOutcome uint8

const (
	// AckRemoved: the record was found with this incarnation and is now
	// durably tombstoned.
	AckRemoved AckOutcome = 1
	// AckAlreadyRemoved: the record was already tombstoned or is gone.
	AckAlreadyRemoved AckOutcome = 2
	// AckStaleVersion: the key is absent, or present with another
	// incarnation; nothing was changed.
	AckStaleVersion AckOutcome = 3
	// AckRetryableFailure: persisting the tombstone failed; the task stays.
	AckRetryableFailure AckOutcome = 4
)

// Terminal reports whether the outcome ends the task. Only terminal outcomes
// are acked; an unknown outcome is not terminal.
func (o AckOutcome) Terminal() bool {
	return o == AckRemoved || o == AckAlreadyRemoved || o == AckStaleVersion
}

// Valid reports whether o is one of the defined outcomes.
func (o AckOutcome) Valid() bool { return o >= AckRemoved && o <= AckRetryableFailure }

var ackOutcomeNames = []string{
	AckRemoved:          "Removed",
	AckAlreadyRemoved:   "AlreadyRemoved",
	AckStaleVersion:     "StaleVersion",
	AckRetryableFailure: "RetryableFailure",
}

func (o AckOutcome) String() string { return enum.Name(ackOutcomeNames, o, "Unknown") }

// TaskResult is a holder's outcome for one fetched task.
type TaskResult struct {
	TaskID      uint64            `msgpack:"id"`
	Key         string            `msgpack:"k"`
	Incarnation ObjectIncarnation `msgpack:"i"`
	Outcome     AckOutcome        `msgpack:"o"`
	// Detail is, on the holder, why a RetryableFailure failed; it travels
	// as AckTasksRequest.Failures, never in a result (a log entry holds
	// results, and its decoder refuses unknown fields).
	Detail string `msgpack:"-"`
}
