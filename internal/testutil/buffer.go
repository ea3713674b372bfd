package testutil

import (
	"bytes"
	"io"
	"sync"
)

// SyncBuffer is a bytes.Buffer that others write (a logger, a child
// process's output) while the test reads it.
type SyncBuffer struct {
	// Tee, when set, gets a copy of every write (a test's logs shown as
	// they come, not only when it fails).
	Tee io.Writer

	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Tee != nil {
		_, _ = s.Tee.Write(p)
	}
	return s.b.Write(p)
}

// Bytes is a copy of what was written so far.
func (s *SyncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
