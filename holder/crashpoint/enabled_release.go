//go:build !testhooks

package crashpoint

// Enabled reports whether this binary was built with the testhooks tag,
// the only build in which a crash point can fire.
const Enabled = false
