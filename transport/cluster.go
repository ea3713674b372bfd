package transport

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sexton/api"
)

// ClusterConfig configures a ClusterClient.
type ClusterConfig struct {
	ClientConfig
	// MaxWait bounds how long one Call keeps trying (DefaultMaxWait if 0).
	// No new attempt starts after it; an attempt's own deadline is the
	// caller's ctx deadline if it has one, else CallTimeout capped at
	// MaxWait.
	MaxWait time.Duration
	// BackoffMin and BackoffMax bound the pause after each round of
	// failed attempts (one attempt per address).
	BackoffMin, BackoffMax time.Duration
}

func (c ClusterConfig) withDefaults() ClusterConfig {
	c.ClientConfig = c.ClientConfig.withDefaults()
	c.MaxWait = orDefault(c.MaxWait, DefaultMaxWait)
	c.BackoffMin = orDefault(c.BackoffMin, DefaultBackoffMin)
	if c.BackoffMax < c.BackoffMin {
		c.BackoffMax = max(DefaultBackoffMax, c.BackoffMin)
	}
	return c
}

// ClusterClient calls whichever master is the Raft leader. It sends to the
// last known leader (initially the first address); on NOT_LEADER it
// follows the answer's leader hint (even to an address not in its list) or,
// without one, tries the next address; a connection failure, TIMEOUT or
// UNAVAILABLE also moves on to the next address. After every round of
// failures it backs off; after MaxWait (or when ctx ends) it gives up with
// an UNAVAILABLE error listing every address it tried and its last error.
// Any other answer (OBJECT_NOT_FOUND, INVALID_KEY, UNAUTHENTICATED...) is
// returned at once.
type ClusterClient struct {
	addrs  []string
	cfg    ClusterConfig
	pool   *Pool
	closed atomic.Bool
	stop   chan struct{}

	mu     sync.Mutex
	leader string
}

// NewClusterClient returns a client for the masters at addrs (duplicates
// and blanks dropped, order kept).
func NewClusterClient(addrs []string, cfg ClusterConfig) *ClusterClient {
	cfg = cfg.withDefaults()
	var list []string
	for _, a := range addrs {
		a = strings.TrimSpace(a)
		if a != "" && !slices.Contains(list, a) {
			list = append(list, a)
		}
	}
	c := &ClusterClient{addrs: list, cfg: cfg, pool: NewPool(cfg.ClientConfig), stop: make(chan struct{})}
	if len(list) > 0 {
		c.leader = list[0]
	}
	return c
}

// Leader is the last address known to be (or named as) the leader.
func (c *ClusterClient) Leader() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader
}

func (c *ClusterClient) setLeader(addr string) {
	c.mu.Lock()
	c.leader = addr
	c.mu.Unlock()
}

// Close closes the client's connections; calls in progress and later fail.
func (c *ClusterClient) Close() {
	if c.closed.CompareAndSwap(false, true) {
		close(c.stop)
		c.pool.Close()
	}
}

func errClusterClosed() *api.Error {
	return api.Errorf(api.CodeUnavailable, "cluster client closed")
}

// attemptLog remembers, per address in the order first tried, the last
// error seen there.
type attemptLog struct {
	addrs []string
	last  map[string]error
	// answer is each address's last answer that was not a timeout or an
	// unreachable master. The last attempt before giving up is often cut
	// by the give-up deadline itself; the message then still says what
	// that master answered before (a NOT_LEADER naming no leader, say).
	answer map[string]error
	count  int
	// mayHaveRun is set once an attempt may have executed: it was sent
	// and got no answer, or the answer itself was OUTCOME_UNKNOWN.
	mayHaveRun bool
}

func (l *attemptLog) add(addr string, err error) {
	if l.last == nil {
		l.last, l.answer = make(map[string]error), make(map[string]error)
	}
	if _, seen := l.last[addr]; !seen {
		l.addrs = append(l.addrs, addr)
	}
	l.last[addr] = err
	if code := api.CodeOf(err); code != api.CodeTimeout && code != api.CodeUnavailable {
		l.answer[addr] = err
	}
	l.count++
}

func (l *attemptLog) String() string {
	parts := make([]string, 0, len(l.addrs))
	for _, a := range l.addrs {
		part := fmt.Sprintf("%s: %v", a, l.last[a])
		if ans := l.answer[a]; ans != nil && ans != l.last[a] {
			part += fmt.Sprintf(" (before: %v)", ans)
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}

// Call calls method on the leader, following it as described on
// ClusterClient. Master calls are retried on NOT_LEADER (the node did not
// act) and, unless NoRetryAfterSend is given, on failures after sending
// too: sexton's master mutations are idempotent or detect their repeat,
// and a caller for whom that is not enough passes NoRetryAfterSend.
func (c *ClusterClient) Call(ctx context.Context, method string, req, resp any, opts ...CallOption) error {
	if len(c.addrs) == 0 {
		return api.Errorf(api.CodeInvalidParams, "cluster client has no addresses")
	}
	o := collectOptions(opts)
	start := time.Now()
	giveUp := start.Add(c.cfg.MaxWait)
	_, callerDeadline := ctx.Deadline()
	bo := newBackoff(c.cfg.BackoffMin, c.cfg.BackoffMax)
	var log attemptLog
	target := c.Leader()
	pos := slices.Index(c.addrs, target) // -1 for a hinted address off the list
	inRound := 0
	for {
		if c.closed.Load() {
			return errClusterClosed()
		}
		actx, cancel := ctx, context.CancelFunc(func() {})
		if !callerDeadline {
			actx, cancel = context.WithDeadline(ctx, minTime(time.Now().Add(c.cfg.CallTimeout), giveUp))
		}
		out, err := c.pool.call(actx, target, method, req, resp)
		cancel()
		if err == nil {
			c.setLeader(target)
			return nil
		}
		if c.closed.Load() {
			return errClusterClosed()
		}
		retry, hint := shouldRetry(out, err, o)
		if !retry {
			return err
		}
		log.add(target, err)
		if maybeRan(out, err) {
			log.mayHaveRun = true
		}
		if ctx.Err() != nil {
			return &causedError{typed: c.giveUpError(method, o, start, &log, ctx.Err().Error()), cause: ctx.Err()}
		}
		if hint != "" && hint != target {
			target = hint
			c.setLeader(hint)
			if i := slices.Index(c.addrs, hint); i >= 0 {
				pos = i
			}
		} else {
			pos = (pos + 1) % len(c.addrs)
			target = c.addrs[pos]
		}
		inRound++
		if !time.Now().Before(giveUp) {
			return c.giveUpError(method, o, start, &log, "")
		}
		if inRound >= len(c.addrs) {
			inRound = 0
			wait := minDur(bo.next(), time.Until(giveUp))
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return &causedError{typed: c.giveUpError(method, o, start, &log, ctx.Err().Error()), cause: ctx.Err()}
			case <-c.stop:
				t.Stop()
				return errClusterClosed()
			}
			if !time.Now().Before(giveUp) {
				return c.giveUpError(method, o, start, &log, "")
			}
		}
	}
}

// shouldRetry decides whether a failed attempt may be repeated elsewhere,
// and returns the leader hint of a NOT_LEADER answer.
func shouldRetry(out outcome, err error, o callOptions) (bool, string) {
	var ae *api.Error
	if !errors.As(err, &ae) {
		return false, ""
	}
	switch ae.Code {
	case api.CodeNotLeader:
		return true, ae.Leader
	case api.CodeUnavailable, api.CodeTimeout:
		return out == notSent || !o.noRetryAfterSend, ""
	case api.CodeOutcomeUnknown:
		// Only a sessioned mutation may be repeated after an outcome
		// the server could not know; the repeat gets the first result.
		return o.mutation, ""
	case api.CodePermissionDenied:
		// Every master decides the caller's role alike, and nothing ran:
		// a configuration answer, not a failover.
		return false, ""
	}
	return false, ""
}

// maybeRan reports whether a failed attempt may have executed on a master.
// An attempt never sent did not run. A master's own answer says what it
// knows: NOT_LEADER and UNAVAILABLE are given only when nothing was
// proposed, OUTCOME_UNKNOWN (and a TIMEOUT, to be safe) when something may
// have been. A request sent with no answer may have run.
func maybeRan(out outcome, err error) bool {
	switch code := api.CodeOf(err); {
	case code == api.CodeOutcomeUnknown:
		return true
	case out == answered:
		return code == api.CodeTimeout
	}
	return out != notSent
}

func (c *ClusterClient) giveUpError(method string, o callOptions, start time.Time, log *attemptLog, why string) *api.Error {
	if why == "" {
		why = fmt.Sprintf("no leader answered within %s", c.cfg.MaxWait)
	}
	code := api.CodeUnavailable
	if o.mutation && log.mayHaveRun {
		// Some attempt may have executed: saying UNAVAILABLE would
		// read as "not done" (invariant 10).
		code = api.CodeOutcomeUnknown
		why += "; an attempt may have executed, the outcome is unknown"
	}
	return api.Errorf(code, "%s: gave up after %s and %d attempts (%s); tried %s",
		method, time.Since(start).Round(time.Millisecond), log.count, why, log.String())
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func minDur(a, b time.Duration) time.Duration { return max(min(a, b), 0) }
