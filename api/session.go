package api

// Session identifies one mutating request of one client, so that a repeat
// of it (after a timeout, a lost answer or a leader change) is answered
// with the first result and changes nothing (invariant 10).
//
// ClientID is chosen by the client at random when it starts (a UUID), Seq
// numbers its mutating requests from 1 upwards, and Floor says that the
// client has received the answer of every request below Floor, so the
// masters may forget those results. A zero Session (empty ClientID) is a
// request without exactly-once protection, as older clients send.
type Session struct {
	ClientID string `msgpack:"client,omitempty" json:"client_id,omitempty"`
	Seq      uint64 `msgpack:"seq,omitempty" json:"seq,omitempty"`
	Floor    uint64 `msgpack:"floor,omitempty" json:"floor,omitempty"`
}

// IsZero reports whether s carries no session.
func (s Session) IsZero() bool { return s.ClientID == "" }

// Valid checks a session that came from outside.
func (s Session) Valid() error {
	if s.IsZero() {
		if s.Seq != 0 || s.Floor != 0 {
			return Errorf(CodeInvalidParams, "session: sequence number without a client id")
		}
		return nil
	}
	if len(s.ClientID) > MaxIDLen {
		return Errorf(CodeInvalidParams, "session: client id of %d bytes exceeds %d", len(s.ClientID), MaxIDLen)
	}
	if s.Seq == 0 {
		return Errorf(CodeInvalidParams, "session: client %q sent sequence number 0", s.ClientID)
	}
	if s.Floor > s.Seq {
		return Errorf(CodeInvalidParams, "session: client %q floor %d above its sequence number %d", s.ClientID, s.Floor, s.Seq)
	}
	return nil
}
