// Package backoff is the master leader's delivery of delete tasks to
// holders: which tasks a fetch withholds (leased, or backing off after
// failures, per mount epoch) and what ListTasks shows of each task's
// deliveries. None of it is replicated; a new leader starts it afresh.
// Every decision takes the time as an argument and does no I/O;
// TestBackoff runs it on a fake clock from testdata/*.txt.
package backoff
