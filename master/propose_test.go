package master

import (
	"reflect"
	"testing"

	"sexton/api"
	"sexton/fsm"
)

// The leader's clock is stamped into every command it proposes, unless
// the handler chose the instant.
func TestStampNow(t *testing.T) {
	cmds := []fsm.Command{
		&fsm.EpochBegin{}, &fsm.MountLocalDisk{}, &fsm.UnmountLocalDisk{}, &fsm.PutStart{}, &fsm.PutEnd{},
		&fsm.PutRevoke{}, &fsm.Remove{}, &fsm.LocalDeleteAck{}, &fsm.RetireStorage{}, &fsm.DropReplicas{},
		&fsm.PutStartBatch{}, &fsm.PutEndBatch{}, &fsm.Settings{}, &fsm.DFSConfigure{}, &fsm.DFSFileOp{},
		&fsm.DFSTouch{}, &fsm.DFSEvict{}, &fsm.DFSMarkLost{}, &fsm.DFSSetMaxBuckets{},
	}
	for _, c := range cmds {
		stampNow(c)
		if now, _ := fieldOf(reflect.ValueOf(c).Elem(), "Now").(int64); now == 0 {
			t.Errorf("%s: Now not stamped", c.Type())
		}
	}
	set := &fsm.PutEnd{Now: 42}
	stampNow(set)
	if set.Now != 42 {
		t.Errorf("a Now the handler chose was overwritten: %d", set.Now)
	}
}

// proposeFor reads the fsm's refusal from the answer's Err field.
func TestAnswersCarryErr(t *testing.T) {
	errType := reflect.TypeOf((*api.Error)(nil))
	for _, r := range []any{fsm.MountResult{}, fsm.UnmountResult{}, fsm.PutStartResult{}, fsm.PutEndResult{},
		fsm.AckResult{}, fsm.RetireResult{}, fsm.DropResult{}, fsm.PutStartBatchResult{}, fsm.PutEndBatchResult{},
		fsm.SettingsResult{}, fsm.DFSResult{}} {
		f, ok := reflect.TypeOf(r).FieldByName("Err")
		if !ok || f.Type != errType {
			t.Errorf("%T has no Err *api.Error field", r)
		}
	}
}
