// Package grant signs and checks write grants (api.WriteGrant): the
// leader's permission for one segment to store one incarnation of one key.
//
// The leader signs a grant per LOCAL_DISK replica when a put starts; the
// holder checks it with the cluster's grant key (replicated state, handed
// to holders at mount) without a round trip to the master. A holder
// therefore stores bytes only for incarnations the leader placed on it
// (docs/DESIGN.md invariant 11). Grants are not secret: a grant lets its bearer
// write one value under one incarnation to one segment until it expires.
package grant
