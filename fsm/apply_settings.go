package fsm

import "sexton/api"

// applySettings merges the command's non-zero settings into the replicated
// ones; the first Settings entry merges them into its Legacy settings (v2)
// or the defaults (v1) instead of the legacy settings the state applied
// under, and so every node ends with the same. Refused (nothing changes)
// when a value is out of bounds or the registry capacity would fall below
// the tasks pending now.
func (st *state) applySettings(c *Settings) *SettingsResult {
	base := st.settings
	var differs bool
	if !st.settingsSet {
		base = api.Settings{}
		if c.Legacy != nil {
			base = *c.Legacy
			differs = withDefaults(base) != st.effectiveSettings()
		}
	}
	result := func(err *api.Error) *SettingsResult {
		r := &SettingsResult{Err: err, Settings: st.effectiveSettings(), LegacyDiffers: differs}
		if differs {
			r.OwnLegacy = st.effectiveSettings()
		}
		return r
	}
	if c.Legacy != nil {
		if err := CheckSettings(*c.Legacy); err != nil {
			return result(api.Errorf(api.CodeInvalidParams, "legacy %s", err.Message))
		}
	}
	if err := CheckSettings(c.Settings); err != nil {
		return result(err)
	}
	next := merged(base, c.Settings)
	capacity := withDefaults(next).RegistryCapacity
	if pending := st.reg.len(); capacity < pending {
		return result(api.Errorf(api.CodeInvalidParams, "settings: registry capacity %d is below the %d tasks pending now", capacity, pending))
	}
	res := result(nil)
	st.settings, st.settingsSet = next, true
	st.reg.capacity = capacity
	res.Settings = st.effectiveSettings()
	return res
}

// effectiveSettings are the settings in force, defaults filled in.
func (st *state) effectiveSettings() api.Settings { return withDefaults(st.settings) }
