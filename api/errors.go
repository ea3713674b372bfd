package api

import (
	"errors"
	"fmt"
)

// Code is a typed error code carried over the wire. Codes are strings so a
// log line or a JSON body is readable without a table.
type Code string

const (
	CodeObjectNotFound          Code = "OBJECT_NOT_FOUND"
	CodeObjectAlreadyExists     Code = "OBJECT_ALREADY_EXISTS"
	CodeSegmentAlreadyExists    Code = "SEGMENT_ALREADY_EXISTS"
	CodeSegmentNotFound         Code = "SEGMENT_NOT_FOUND"
	CodeNotLeader               Code = "NOT_LEADER"
	CodeStaleMountEpoch         Code = "STALE_MOUNT_EPOCH"
	CodeLocalDeleteRegistryFull Code = "LOCAL_DELETE_REGISTRY_FULL"
	CodeCapabilityRequired      Code = "CAPABILITY_REQUIRED"
	CodeInvalidKey              Code = "INVALID_KEY"
	CodeInvalidParams           Code = "INVALID_PARAMS"
	CodeNoSpace                 Code = "NO_SPACE"
	CodeUnavailable             Code = "UNAVAILABLE"
	CodeUnauthenticated         Code = "UNAUTHENTICATED"
	CodeFrameTooLarge           Code = "FRAME_TOO_LARGE"
	CodeTimeout                 Code = "TIMEOUT"
	CodeCorrupt                 Code = "CORRUPT"
	CodeDFSMismatch             Code = "DFS_CONFIG_MISMATCH"
	CodeInternal                Code = "INTERNAL"
	// CodeOutcomeUnknown: the request may or may not have been executed
	// (leadership was lost after it was proposed, an apply timed out, or
	// the client gave up after sending). Never "not executed".
	CodeOutcomeUnknown Code = "OUTCOME_UNKNOWN"
	// CodeIncarnationMismatch: a conditional request named an incarnation
	// the key no longer (or never) held.
	CodeIncarnationMismatch Code = "INCARNATION_MISMATCH"
	// CodeGrantRefused: a holder refused a data write whose grant is
	// missing, forged, expired, for another segment, or for an
	// incarnation it has already tombstoned.
	CodeGrantRefused Code = "GRANT_REFUSED"
	// CodeSegmentNeedsAdoption: a rebuilt cluster refused the mount of a
	// holder of the lost cluster that the rebuild did not scan; mounting
	// it would reconcile (tombstone) every copy only it holds. The
	// operator adopts it (a rebuild rerun that scans it) or retires it.
	CodeSegmentNeedsAdoption Code = "SEGMENT_NEEDS_ADOPTION"
	// CodePermissionDenied: the caller's role (from its certificate or
	// the token it proved) may not call this method; nothing was done.
	CodePermissionDenied Code = "PERMISSION_DENIED"
	// CodeIncarnationStale: a PutCommit's incarnation can no longer
	// commit: its reserved block expired, or the key already holds an
	// incarnation at or above it. Nothing changed; the client asks for a
	// new grant and writes the value again.
	CodeIncarnationStale Code = "INCARNATION_STALE"
)

// Error is sexton's typed error. It crosses the wire as is. Leader is set on
// NOT_LEADER when the answering node knows the leader's RPC address.
type Error struct {
	Code    Code   `msgpack:"code"`
	Message string `msgpack:"msg,omitempty"`
	Leader  string `msgpack:"leader,omitempty"`
}

func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return string(e.Code) + ": " + e.Message
}

// Is makes errors.Is(err, ErrObjectNotFound) match any *Error of that code.
func (e *Error) Is(target error) bool {
	var t *Error
	if errors.As(target, &t) {
		return t.Code == e.Code
	}
	return false
}

// Sentinels, for errors.Is. Never mutate them; use Errorf to add detail.
var (
	ErrObjectNotFound          = &Error{Code: CodeObjectNotFound}
	ErrObjectAlreadyExists     = &Error{Code: CodeObjectAlreadyExists}
	ErrSegmentAlreadyExists    = &Error{Code: CodeSegmentAlreadyExists}
	ErrSegmentNotFound         = &Error{Code: CodeSegmentNotFound}
	ErrNotLeader               = &Error{Code: CodeNotLeader}
	ErrStaleMountEpoch         = &Error{Code: CodeStaleMountEpoch}
	ErrLocalDeleteRegistryFull = &Error{Code: CodeLocalDeleteRegistryFull}
	ErrCapabilityRequired      = &Error{Code: CodeCapabilityRequired}
	ErrInvalidKey              = &Error{Code: CodeInvalidKey}
	ErrInvalidParams           = &Error{Code: CodeInvalidParams}
	ErrNoSpace                 = &Error{Code: CodeNoSpace}
	ErrUnavailable             = &Error{Code: CodeUnavailable}
	ErrUnauthenticated         = &Error{Code: CodeUnauthenticated}
	ErrFrameTooLarge           = &Error{Code: CodeFrameTooLarge}
	ErrTimeout                 = &Error{Code: CodeTimeout}
	ErrCorrupt                 = &Error{Code: CodeCorrupt}
	ErrDFSMismatch             = &Error{Code: CodeDFSMismatch}
	ErrInternal                = &Error{Code: CodeInternal}
	ErrOutcomeUnknown          = &Error{Code: CodeOutcomeUnknown}
	ErrIncarnationMismatch     = &Error{Code: CodeIncarnationMismatch}
	ErrGrantRefused            = &Error{Code: CodeGrantRefused}
	ErrSegmentNeedsAdoption    = &Error{Code: CodeSegmentNeedsAdoption}
	ErrPermissionDenied        = &Error{Code: CodePermissionDenied}
)

// Errorf returns a new *Error with the given code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// CodeOf returns the code of err if it is (or wraps) an *Error, else
// CodeInternal; nil gives "", and so does a nil *Error passed as an error
// (a result's Err field handed on as is).
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		if e == nil {
			return ""
		}
		return e.Code
	}
	return CodeInternal
}

// AsError converts any error to an *Error for the wire, keeping the code of
// a typed error and wrapping anything else as INTERNAL.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		if e.Message == "" && err.Error() != e.Error() {
			return &Error{Code: e.Code, Message: err.Error(), Leader: e.Leader}
		}
		return e
	}
	return &Error{Code: CodeInternal, Message: err.Error()}
}
