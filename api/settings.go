package api

import (
	"fmt"
	"strings"
	"time"
)

// Settings are the cluster-wide knobs that change what Apply does. They are
// replicated state (invariant 12): set at bootstrap from the first leader's
// flags, changed only through the log, never by a node's own flags. In a
// SettingsSet request a zero field means "leave as it is".
type Settings struct {
	// RegistryCapacity bounds the local delete registry (tasks plus
	// reservations). It cannot be set below the tasks pending now.
	RegistryCapacity int `msgpack:"registry_cap,omitempty" json:"registry_capacity"`
	// SessionTTLMillis: a client session idle this long (leader time) is
	// forgotten with its results; a request that arrives after that starts
	// a new session and runs again. Exactly-once therefore holds for
	// retries within the TTL (one hour by default, far beyond any client's
	// retry window), not beyond it.
	SessionTTLMillis int64 `msgpack:"session_ttl_ms,omitempty" json:"session_ttl_ms"`
	// MaxSessions bounds the client sessions kept; when full of sessions
	// younger than the TTL, requests of new clients are refused.
	MaxSessions int `msgpack:"max_sessions,omitempty" json:"max_sessions"`
	// MaxSessionResults bounds the unacknowledged results kept per client.
	MaxSessionResults int `msgpack:"max_session_results,omitempty" json:"max_session_results"`
}

// SettingUnit says how a setting's int64 value reads: a count, or a
// duration in milliseconds (shown and set as a Go duration).
type SettingUnit uint8

const (
	UnitCount SettingUnit = iota
	UnitMillis
)

// SettingSpec is one row of the settings table: everything about a
// replicated setting except the code that acts on it. Validation,
// defaults, merging, the snapshot decoder, the master's metric, flags and
// flag warnings, and the CLI's operator settings set/show all derive from
// SettingsTable, so a new setting is a field of Settings, its row, and
// the code that uses it.
type SettingSpec struct {
	// Flag is the command-line name (master flag, operator settings set).
	Flag string
	// Key is the msgpack key of the field in Settings (the wire and the
	// snapshot's settings record); JSON is its json name.
	Key  string
	JSON string
	// Label names the setting in error messages.
	Label string
	Unit  SettingUnit
	// Default is the value in force until a Settings entry sets one;
	// Min..Max the values a Settings command or a snapshot may carry
	// (zero is "unchanged" and always passes the check).
	Default, Min, Max int64
	// Help describes the setting in flag usages.
	Help string
	// Get and Set read and write the setting's field of a Settings.
	Get func(*Settings) int64
	Set func(*Settings, int64)
}

// Defaults and bounds of the replicated settings that code outside the
// table names.
const (
	DefaultRegistryCapacity  = 50000
	DefaultSessionTTLMillis  = int64(60 * 60 * 1000) // one hour
	DefaultMaxSessions       = 100000
	DefaultMaxSessionResults = 1024

	MaxRegistryCapacity  = 1 << 30
	MaxSessionTTLMillis  = int64(7 * 24 * 60 * 60 * 1000) // a week
	MaxMaxSessions       = 10_000_000
	MaxMaxSessionResults = 1 << 16
	// MinSessionTTLMillis: a TTL below a second would expire retries in
	// flight.
	MinSessionTTLMillis = int64(1000)
)

// SettingsTable lists the replicated settings in the order they are shown.
var SettingsTable = []SettingSpec{
	{
		Flag: "registry-capacity", Key: "registry_cap", JSON: "registry_capacity", Label: "registry capacity",
		Default: DefaultRegistryCapacity, Min: 1, Max: MaxRegistryCapacity,
		Help: "local delete registry capacity (tasks + reservations); not below the tasks pending now",
		Get:  func(s *Settings) int64 { return int64(s.RegistryCapacity) },
		Set:  func(s *Settings, v int64) { s.RegistryCapacity = int(v) },
	},
	{
		Flag: "session-ttl", Key: "session_ttl_ms", JSON: "session_ttl_ms", Label: "session TTL", Unit: UnitMillis,
		Default: DefaultSessionTTLMillis, Min: MinSessionTTLMillis, Max: MaxSessionTTLMillis,
		Help: "forget a client session idle this long (leader time)",
		Get:  func(s *Settings) int64 { return s.SessionTTLMillis },
		Set:  func(s *Settings, v int64) { s.SessionTTLMillis = v },
	},
	{
		Flag: "max-sessions", Key: "max_sessions", JSON: "max_sessions", Label: "max sessions",
		Default: DefaultMaxSessions, Min: 1, Max: MaxMaxSessions,
		Help: "client sessions kept at most",
		Get:  func(s *Settings) int64 { return int64(s.MaxSessions) },
		Set:  func(s *Settings, v int64) { s.MaxSessions = int(v) },
	},
	{
		Flag: "max-session-results", Key: "max_session_results", JSON: "max_session_results", Label: "max session results",
		Default: DefaultMaxSessionResults, Min: 1, Max: MaxMaxSessionResults,
		Help: "unacknowledged results kept per client",
		Get:  func(s *Settings) int64 { return int64(s.MaxSessionResults) },
		Set:  func(s *Settings, v int64) { s.MaxSessionResults = int(v) },
	},
}

// SettingByKey is the row whose Key is key.
func SettingByKey(key string) (SettingSpec, bool) {
	for _, sp := range SettingsTable {
		if sp.Key == key {
			return sp, true
		}
	}
	return SettingSpec{}, false
}

// Name is the setting's name where it is shown (operator settings show,
// the master's settings metric without its unit): its JSON name without
// a unit suffix.
func (sp SettingSpec) Name() string {
	if sp.Unit == UnitMillis {
		return strings.TrimSuffix(sp.JSON, "_ms")
	}
	return sp.JSON
}

// Format shows value v in the setting's unit.
func (sp SettingSpec) Format(v int64) string {
	if sp.Unit == UnitMillis {
		return (time.Duration(v) * time.Millisecond).String()
	}
	return fmt.Sprint(v)
}

// Check refuses v outside the setting's bounds; zero ("unchanged") passes.
func (sp SettingSpec) Check(v int64) *Error {
	if v == 0 || (v >= sp.Min && v <= sp.Max) {
		return nil
	}
	if sp.Unit == UnitMillis {
		return Errorf(CodeInvalidParams, "settings: %s %d ms outside %d..%d", sp.Label, v, sp.Min, sp.Max)
	}
	return Errorf(CodeInvalidParams, "settings: %s %d outside %d..%d", sp.Label, v, sp.Min, sp.Max)
}

// DefaultSettings returns the settings in force in a cluster that never
// applied a Settings entry.
func DefaultSettings() Settings {
	var s Settings
	for _, sp := range SettingsTable {
		sp.Set(&s, sp.Default)
	}
	return s
}

// Merged returns cur with the non-zero fields of change applied.
func (cur Settings) Merged(change Settings) Settings {
	for _, sp := range SettingsTable {
		if v := sp.Get(&change); v != 0 {
			sp.Set(&cur, v)
		}
	}
	return cur
}

// Check refuses a field outside its bounds (zero fields are "unchanged"
// and pass).
func (s Settings) Check() *Error {
	for _, sp := range SettingsTable {
		if err := sp.Check(sp.Get(&s)); err != nil {
			return err
		}
	}
	return nil
}
