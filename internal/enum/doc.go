// Package enum names the values of the module's small integer enums from a
// table indexed by value, so an enum's String method is one line and its
// names sit next to its constants.
package enum
