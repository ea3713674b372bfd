package fsm

import (
	"reflect"
	"slices"

	"sexton/api"
)

// model is the obviously-correct reference for the property test: the
// semantics of the FSM written as plainly as possible (slices, linear
// scans, no indexes, no copy-on-write, no interning).
type model struct {
	capacity    int
	cluster     uint64
	masterEpoch uint64
	nextID      uint64
	segs        map[api.SegmentID]*mSeg
	objs        map[string]*mEntry
	tasks       []api.LocalDeleteTask // in id order
	sessions    map[string]*mSession
}

// mSession is a client session in the model: the codes of every answer
// not yet below the floor. (The property test's runs are far from the
// TTL and the size bounds.)
type mSession struct {
	floor   uint64
	results map[uint64][]api.Code
}

type mSeg struct {
	client           string
	epoch            uint64
	mounted, retired bool
	tomb             bool
	caps             []api.Capability
	pool, endpoint   string
	capacity         int64
}

type mObj struct {
	inc    api.ObjectIncarnation
	tenant string
	segs   []api.SegmentID
}

type mEntry struct{ complete, pending *mObj }

func newModel(capacity int) *model {
	return &model{capacity: capacity, nextID: 1, segs: map[api.SegmentID]*mSeg{}, objs: map[string]*mEntry{}, sessions: map[string]*mSession{}}
}

func (m *model) entry(k string) *mEntry {
	if m.objs[k] == nil {
		m.objs[k] = &mEntry{}
	}
	return m.objs[k]
}

func (m *model) hasTask(seg api.SegmentID, key string, inc api.ObjectIncarnation) bool {
	for _, t := range m.tasks {
		if t.Segment == seg && t.Key == key && t.Incarnation == inc {
			return true
		}
	}
	return false
}

// need lists the new tasks deleting o would create.
func (m *model) need(key string, o *mObj) []api.SegmentID {
	var out []api.SegmentID
	for _, s := range o.segs {
		sg := m.segs[s]
		if sg != nil && !sg.retired && sg.tomb && !m.hasTask(s, key, o.inc) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func (m *model) create(key string, o *mObj, segs []api.SegmentID, now int64) {
	for _, s := range segs {
		m.tasks = append(m.tasks, api.LocalDeleteTask{ID: m.nextID, Segment: s, Key: key, Tenant: o.tenant, Incarnation: o.inc, Created: now})
		m.nextID++
	}
}

// apply returns the error code of the command's result (for Remove, the
// per-key codes) after applying it to the model. A sessioned request is
// answered from the session (nothing executed) when its seq was answered
// before, OUTCOME_UNKNOWN when that answer is below the floor.
func (m *model) apply(index uint64, cmd Command) []api.Code {
	switch c := cmd.(type) {
	case *PutStart:
		return m.sessioned(c.Session, 1, func() []api.Code { return m.exec(index, cmd) })
	case *PutEnd:
		return m.sessioned(c.Session, 1, func() []api.Code { return m.exec(index, cmd) })
	case *PutRevoke:
		return m.sessioned(c.Session, 1, func() []api.Code { return m.exec(index, cmd) })
	case *Settings:
		return m.sessioned(c.Session, 1, func() []api.Code {
			if c.Settings.RegistryCapacity < len(m.tasks) {
				return []api.Code{api.CodeInvalidParams}
			}
			m.capacity = c.Settings.RegistryCapacity
			return []api.Code{""}
		})
	case *Remove:
		spans := c.Spans
		if len(spans) == 0 {
			spans = []RemoveSpan{{Session: c.Session, N: len(c.Keys)}}
		}
		var out []api.Code
		from := 0
		for _, sp := range spans {
			keys := c.Keys[from : from+sp.N]
			var ifInc []api.ObjectIncarnation
			if len(c.IfInc) != 0 {
				ifInc = c.IfInc[from : from+sp.N]
			}
			out = append(out, m.sessioned(sp.Session, sp.N, func() []api.Code { return m.remove(keys, ifInc, c.Now) })...)
			from += sp.N
		}
		return out
	}
	return m.exec(index, cmd)
}

func (m *model) sessioned(s api.Session, n int, exec func() []api.Code) []api.Code {
	if s.IsZero() {
		return exec()
	}
	cs := m.sessions[s.ClientID]
	if cs == nil {
		cs = &mSession{results: map[uint64][]api.Code{}}
		m.sessions[s.ClientID] = cs
	}
	if s.Floor > cs.floor {
		cs.floor = s.Floor
		for seq := range cs.results {
			if seq < cs.floor {
				delete(cs.results, seq)
			}
		}
	}
	if r, ok := cs.results[s.Seq]; ok {
		return r
	}
	if s.Seq < cs.floor {
		out := make([]api.Code, n)
		for i := range out {
			out[i] = api.CodeOutcomeUnknown
		}
		return out
	}
	r := exec()
	cs.results[s.Seq] = r
	return r
}

// remove is Remove's effect on keys, with expected incarnations.
func (m *model) remove(keys []string, ifInc []api.ObjectIncarnation, now int64) []api.Code {
	out := []api.Code{}
	for i, k := range keys {
		e := m.entry(k)
		if e.complete == nil {
			out = append(out, api.CodeObjectNotFound)
			continue
		}
		if len(ifInc) != 0 && !ifInc[i].IsZero() && ifInc[i] != e.complete.inc {
			out = append(out, api.CodeIncarnationMismatch)
			continue
		}
		n := m.need(k, e.complete)
		if len(m.tasks)+len(n) > m.capacity {
			out = append(out, api.CodeLocalDeleteRegistryFull)
			continue
		}
		m.create(k, e.complete, n, now)
		e.complete = nil
		out = append(out, "")
	}
	return out
}

// exec applies a command without a session.
func (m *model) exec(index uint64, cmd Command) []api.Code {
	one := func(c api.Code) []api.Code { return []api.Code{c} }
	switch c := cmd.(type) {
	case *EpochBegin:
		if m.cluster == 0 {
			m.cluster = c.ClusterID
		}
		m.masterEpoch++
		return one("")
	case *MountLocalDisk:
		caps := normalizeCaps(c.Capabilities)
		s := m.segs[c.Segment]
		if s != nil && s.retired {
			return one(api.CodeInvalidParams)
		}
		if s != nil && s.mounted && s.client == c.ClientID {
			if s.pool == c.Pool && s.capacity == c.Capacity && s.endpoint == c.Endpoint && slices.Equal(s.caps, caps) {
				return one(api.CodeSegmentAlreadyExists)
			}
			s.pool, s.capacity, s.endpoint, s.caps, s.tomb = c.Pool, c.Capacity, c.Endpoint, caps, api.HasCapability(caps, api.CapObjectTombstoneV1)
			return one("")
		}
		for id, o := range m.segs {
			if id != c.Segment && o.mounted && o.client == c.ClientID {
				o.mounted, o.client = false, ""
			}
		}
		if s == nil {
			s = &mSeg{}
			m.segs[c.Segment] = s
		}
		s.epoch++
		s.client, s.mounted = c.ClientID, true
		s.pool, s.capacity, s.endpoint, s.caps, s.tomb = c.Pool, c.Capacity, c.Endpoint, caps, api.HasCapability(caps, api.CapObjectTombstoneV1)
		return one("")
	case *UnmountLocalDisk:
		s := m.segs[c.Segment]
		if s == nil {
			return one(api.CodeSegmentNotFound)
		}
		if !s.mounted || s.epoch != c.Epoch {
			return one(api.CodeStaleMountEpoch)
		}
		s.mounted, s.client = false, ""
		return one("")
	case *PutStart:
		var segs []api.SegmentID
		for _, r := range c.Replicas {
			s := m.segs[r.Segment]
			switch {
			case s == nil:
				return one(api.CodeSegmentNotFound)
			case s.retired || !s.mounted || slices.Contains(segs, r.Segment):
				return one(api.CodeInvalidParams)
			}
			segs = append(segs, r.Segment)
		}
		e := m.entry(c.Key)
		if e.pending != nil || (c.IfAbsent && e.complete != nil) {
			return one(api.CodeObjectAlreadyExists)
		}
		e.pending = &mObj{inc: api.ObjectIncarnation{High: m.cluster, Low: index}, tenant: api.DefaultTenant, segs: segs}
		return one("")
	case *PutEnd, *PutRevoke:
		key, inc, end := "", api.ObjectIncarnation{}, false
		if pe, ok := c.(*PutEnd); ok {
			key, inc, end = pe.Key, pe.Incarnation, true
		} else {
			pr := c.(*PutRevoke)
			key, inc = pr.Key, pr.Incarnation
		}
		e := m.entry(key)
		if e.pending == nil || e.pending.inc != inc {
			return one(api.CodeObjectNotFound)
		}
		victim := e.pending
		if end {
			victim = e.complete
		}
		if victim != nil {
			n := m.need(key, victim)
			if len(m.tasks)+len(n) > m.capacity {
				return one(api.CodeLocalDeleteRegistryFull)
			}
			m.create(key, victim, n, nowOf(cmd))
		}
		if end {
			e.complete = e.pending
		}
		e.pending = nil
		return one("")
	case *LocalDeleteAck:
		s := m.segs[c.Segment]
		switch {
		case s == nil:
			return one(api.CodeSegmentNotFound)
		case !s.mounted || s.epoch != c.Epoch:
			return one(api.CodeStaleMountEpoch)
		case !s.tomb:
			return one(api.CodeCapabilityRequired)
		}
		for _, r := range c.Results {
			if !r.Outcome.Valid() {
				return one(api.CodeInvalidParams)
			}
		}
		for _, r := range c.Results {
			if !r.Outcome.Terminal() {
				continue
			}
			m.tasks = slices.DeleteFunc(m.tasks, func(t api.LocalDeleteTask) bool {
				return t.ID == r.TaskID && t.Segment == c.Segment && t.Key == r.Key && t.Incarnation == r.Incarnation
			})
		}
		return one("")
	case *RetireStorage:
		s := m.segs[c.Segment]
		if s == nil {
			return one(api.CodeSegmentNotFound)
		}
		s.retired, s.mounted, s.client = true, false, ""
		m.tasks = slices.DeleteFunc(m.tasks, func(t api.LocalDeleteTask) bool { return t.Segment == c.Segment })
		for _, e := range m.objs {
			for _, o := range []*mObj{e.complete, e.pending} {
				if o != nil {
					o.segs = slices.DeleteFunc(slices.Clone(o.segs), func(x api.SegmentID) bool { return x == c.Segment })
				}
			}
		}
		return one("")
	}
	panic("model: unknown command")
}

func nowOf(cmd Command) int64 {
	return reflect.ValueOf(cmd).Elem().FieldByName("Now").Int()
}

// fetchable is invariant 7 in the model: no older pending task of the key.
func (m *model) fetchable(t api.LocalDeleteTask) bool {
	for _, o := range m.tasks {
		if o.Key == t.Key && o.Incarnation.Less(t.Incarnation) {
			return false
		}
	}
	return true
}

// codes extracts the error codes of an FSM result, in the model's shape.
func codes(res any) []api.Code {
	switch r := res.(type) {
	case *RemoveResult:
		var out []api.Code
		for _, k := range r.Results {
			out = append(out, codeOf(k.Err))
		}
		return out
	case *EpochBeginResult, *MountResult, *UnmountResult, *PutStartResult, *PutEndResult, *AckResult, *RetireResult, *SettingsResult:
		return []api.Code{codeOf(AnswerOf(res).Err)}
	}
	return nil
}

func resultsEqual(a, b any) bool { return reflect.DeepEqual(a, b) }
