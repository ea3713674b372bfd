package fsm

import (
	"encoding/hex"
	"testing"

	"sexton/api"
)

// TestSharedBodiesKeepTheirBytes pins the entries of the bodies that share
// a definition (PutStart and PutCommit embedding their items, the PutBatch
// commands, DropTombstoned on DropReplicas): each encodes to the bytes its
// fields written out one by one encoded to, so a log written before still
// decodes and a follower of either build writes the same entries.
func TestSharedBodiesKeepTheirBytes(t *testing.T) {
	inc := api.ObjectIncarnation{High: 3, Low: 9}
	sess := api.Session{ClientID: "c", Seq: 4, Floor: 2}
	reps := []api.ReplicaDescriptor{{Kind: api.ReplicaLocalDisk, Segment: "s1", Pool: "p"}}
	for _, tc := range []struct {
		cmd  Command
		want string
	}{
		{&PutCommit{PutCommitItem: PutCommitItem{Key: "k", Incarnation: inc, Tenant: "t", Size: 5, Replicas: reps, PutID: "id", IfAbsent: true}, Session: sess, Now: 77},
			"1d8aa176cc01a36b6579a16ba3696e6382a168cf0000000000000003a16ccf0000000000000009a674656e616e74a174a473697a65d30000000000000005a87265706c696361739183a46b696e64cc01a3736567a27331a4706f6f6ca170a67075745f6964a26964a969665f616273656e74c3a47365737383a6636c69656e74a163a3736571cf0000000000000004a5666c6f6f72cf0000000000000002a36e6f77d3000000000000004d"},
		{&PutStart{PutStartItem: PutStartItem{Key: "k", Tenant: "t", Size: 5, Replicas: reps, PutID: "id", IfAbsent: true}, Session: sess, Now: 8},
			"0489a176cc02a36b6579a16ba674656e616e74a174a473697a65d30000000000000005a87265706c696361739183a46b696e64cc01a3736567a27331a4706f6f6ca170a67075745f6964a26964a969665f616273656e74c3a47365737383a6636c69656e74a163a3736571cf0000000000000004a5666c6f6f72cf0000000000000002a36e6f77d30000000000000008"},
		{&PutStart{V: PutStartV1, PutStartItem: PutStartItem{Key: "k"}},
			"0488a176cc01a36b6579a16ba674656e616e74a0a473697a65d30000000000000000a87265706c69636173c0a67075745f6964a0a969665f616273656e74c2a36e6f77d30000000000000000"},
		{&PutStartBatch{Items: []PutStartItem{{Key: "a", Tenant: "t", Size: 1, Replicas: reps, PutID: "x", IfAbsent: true}, {Key: "b"}}, Session: sess, Now: 9},
			"1184a176cc02a56974656d739286a36b6579a161a674656e616e74a174a473697a65d30000000000000001a87265706c696361739183a46b696e64cc01a3736567a27331a4706f6f6ca170a67075745f6964a178a969665f616273656e74c386a36b6579a162a674656e616e74a0a473697a65d30000000000000000a87265706c69636173c0a67075745f6964a0a969665f616273656e74c2a47365737383a6636c69656e74a163a3736571cf0000000000000004a5666c6f6f72cf0000000000000002a36e6f77d30000000000000009"},
		{&PutStartBatch{V: PutStartBatchV1, Items: []PutStartItem{{Key: "a"}}},
			"1183a176cc01a56974656d739186a36b6579a161a674656e616e74a0a473697a65d30000000000000000a87265706c69636173c0a67075745f6964a0a969665f616273656e74c2a36e6f77d30000000000000000"},
		{&PutEndBatch{Items: []PutEndItem{{Key: "a", Incarnation: inc}}, Session: sess, Now: 10},
			"1284a176cc02a56974656d739182a36b6579a161a3696e6382a168cf0000000000000003a16ccf0000000000000009a47365737383a6636c69656e74a163a3736571cf0000000000000004a5666c6f6f72cf0000000000000002a36e6f77d3000000000000000a"},
		{&PutCommitBatch{Items: []PutCommitItem{{Key: "z", Incarnation: inc, Size: 3, Replicas: reps}}, Now: 11},
			"1e83a176cc01a56974656d739187a36b6579a17aa3696e6382a168cf0000000000000003a16ccf0000000000000009a674656e616e74a0a473697a65d30000000000000003a87265706c696361739183a46b696e64cc01a3736567a27331a4706f6f6ca170a67075745f6964a0a969665f616273656e74c2a36e6f77d3000000000000000b"},
		{&DropTombstoned{Segment: "s1", Epoch: 2, Refs: []api.ObjectRef{{Key: "k", Incarnation: inc}}, Now: 23},
			"1985a176cc01a3736567a27331a565706f6368cf0000000000000002a4726566739182a16ba16ba16982a168cf0000000000000003a16ccf0000000000000009a36e6f77d30000000000000017"},
	} {
		b, err := Encode(tc.cmd)
		if err != nil {
			t.Fatalf("%T: %v", tc.cmd, err)
		}
		if got := hex.EncodeToString(b); got != tc.want {
			t.Errorf("%T encodes to\n%s\nwant\n%s", tc.cmd, got, tc.want)
		}
		if _, err := Decode(b); err != nil {
			t.Errorf("%T: decode: %v", tc.cmd, err)
		}
	}
}
