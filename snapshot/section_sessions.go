package snapshot

// SectionSessions holds the session table: SessionRecords ordered by
// (client id, seq).
const SectionSessions = "sessions"

var sessionsSection = sectionSpec{
	name: SectionSessions, since: Format120, required: true,
	put: putTyped(SectionSessions, "snapshot.SessionRecord records",
		func(_ *Writer, s *SessionRecord) error { return validateSession(s) }, addReflect[SessionRecord]),
	get:   getTyped(func(mr *mpReader, s *SessionRecord, _ string) error { return decodeSessionRecord(mr, s) }, validateSession),
	count: func(c *Counts) { c.Sessions++ },
}
