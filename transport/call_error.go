package transport

import (
	"context"
	"errors"

	"sexton/api"
)

// causedError is an *api.Error that also unwraps to the cause behind it,
// so a timed-out call matches both api.ErrTimeout and
// context.DeadlineExceeded.
type causedError struct {
	typed *api.Error
	cause error
}

func (e *causedError) Error() string   { return e.typed.Error() }
func (e *causedError) Unwrap() []error { return []error{e.typed, e.cause} }

// contextError turns a done ctx into the error a call returns: TIMEOUT for
// a passed deadline, UNAVAILABLE for a cancellation.
func contextError(ctx context.Context, what string) error {
	cause := ctx.Err()
	if errors.Is(cause, context.DeadlineExceeded) {
		return &causedError{typed: api.Errorf(api.CodeTimeout, "%s: deadline exceeded", what), cause: cause}
	}
	return &causedError{typed: api.Errorf(api.CodeUnavailable, "%s: canceled", what), cause: cause}
}

// outcome says how far a failed call got, which is what decides whether a
// retry could run the request twice.
type outcome int

const (
	notSent      outcome = iota // the request never left this process
	sentNoAnswer                // it may have reached the server; no answer came
	answered                    // the server answered (possibly with an error)
)
