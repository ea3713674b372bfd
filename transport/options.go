package transport

// CallOption adjusts one ClusterClient call.
type CallOption func(*callOptions)

type callOptions struct {
	noRetryAfterSend bool
	mutation         bool
}

// Mutation marks a call that changes state and carries a session
// (api.Session), so that repeating it is safe: OUTCOME_UNKNOWN answers are
// retried like NOT_LEADER (the repeat returns the first result), and a
// call that gives up after an attempt that may have executed returns
// OUTCOME_UNKNOWN, never a plain UNAVAILABLE that reads as "not done".
func Mutation() CallOption {
	return func(o *callOptions) { o.mutation = true }
}

// NoRetryAfterSend makes a call retry only when the request certainly did
// not run: NOT_LEADER answers (the node did not act) and failures before
// the request left this process. A connection lost or a timeout after
// sending, or an UNAVAILABLE answer, is returned instead of retried, so a
// request that is neither idempotent nor detectable as a repeat runs at
// most once. Without it, such failures are retried on the next address.
func NoRetryAfterSend() CallOption {
	return func(o *callOptions) { o.noRetryAfterSend = true }
}

func collectOptions(opts []CallOption) callOptions {
	var o callOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}
