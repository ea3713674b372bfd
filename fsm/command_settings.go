package fsm

import "sexton/api"

// CmdSettings changes the replicated settings (invariant 12): every knob
// that changes what Apply does lives in the state, set through the log,
// never taken from a node's own configuration.
const CmdSettings CommandType = 19

// Settings schema versions. v2 adds Legacy.
const (
	SettingsV1 uint8 = 1
	SettingsV2 uint8 = 2
)

// Settings sets the cluster's replicated settings. A zero field leaves that
// setting as it is. A registry capacity below the tasks pending now is
// refused (INVALID_PARAMS), as is any value outside the bounds below.
//
// The first Settings entry of a state changes the settings it applied
// under before: with Legacy (v2), the legacy settings of the leader that
// proposed it, which every node takes as the base, so all nodes agree
// afterwards even if their own legacy settings differed (the result says
// so on such a node); without it (v1), the defaults, as the builds that
// wrote v1 entries applied them.
type Settings struct {
	V        uint8         `msgpack:"v"`
	Settings api.Settings  `msgpack:"settings"`
	Session  api.Session   `msgpack:"sess,omitempty"`
	Legacy   *api.Settings `msgpack:"legacy,omitempty"`
	Now      int64         `msgpack:"now"`
}

// SettingsResult answers Settings with the effective settings after it
// (defaults filled in).
type SettingsResult struct {
	Err       *api.Error
	Settings  api.Settings
	Duplicate bool
	// LegacyDiffers: the entry carried the proposing leader's legacy
	// settings and they are not the ones this state applied under until
	// now (OwnLegacy, defaults filled in). The entries before it may
	// have been applied differently here than on the leader.
	LegacyDiffers bool
	OwnLegacy     api.Settings
}

// Defaults and bounds of the replicated settings; the table in package
// api (api.SettingsTable) is where they are set.
const (
	DefaultSessionTTLMillis  = api.DefaultSessionTTLMillis
	DefaultMaxSessions       = api.DefaultMaxSessions
	DefaultMaxSessionResults = api.DefaultMaxSessionResults

	MaxRegistryCapacity  = api.MaxRegistryCapacity
	MaxSessionTTLMillis  = api.MaxSessionTTLMillis
	MaxMaxSessions       = api.MaxMaxSessions
	MaxMaxSessionResults = api.MaxMaxSessionResults
)

// DefaultSettings returns the settings in force in a cluster that never
// applied a Settings entry.
func DefaultSettings() api.Settings { return api.DefaultSettings() }

// withDefaults fills s's zero fields from DefaultSettings.
func withDefaults(s api.Settings) api.Settings { return merged(DefaultSettings(), s) }

// merged returns cur with the non-zero fields of change applied.
func merged(cur, change api.Settings) api.Settings { return cur.Merged(change) }

// CheckSettings refuses values outside the bounds (zero fields are
// "unchanged" and pass). The leader calls it before proposing; Apply and
// Restore call it too.
func CheckSettings(s api.Settings) *api.Error { return s.Check() }
