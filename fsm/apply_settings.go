package fsm

import "sexton/api"

// applySettings merges the command's non-zero settings into the replicated
// ones. Refused (nothing changes) when a value is out of bounds or the
// registry capacity would fall below the tasks pending now.
func (st *state) applySettings(c *Settings) *SettingsResult {
	if err := CheckSettings(c.Settings); err != nil {
		return &SettingsResult{Err: err, Settings: st.effectiveSettings()}
	}
	next := merged(st.settings, c.Settings)
	capacity := withDefaults(next).RegistryCapacity
	if pending := st.reg.len(); capacity < pending {
		return &SettingsResult{
			Err:      api.Errorf(api.CodeInvalidParams, "settings: registry capacity %d is below the %d tasks pending now", capacity, pending),
			Settings: st.effectiveSettings(),
		}
	}
	st.settings, st.settingsSet = next, true
	st.reg.capacity = capacity
	return &SettingsResult{Settings: st.effectiveSettings()}
}

// effectiveSettings are the settings in force, defaults filled in.
func (st *state) effectiveSettings() api.Settings { return withDefaults(st.settings) }
