package fsm

import "testing"

// Each test runs testdata/<snake_case name>.txt; the files say, step by
// step, what the test proves.

func TestMountEpochFencesPreviousOwner(t *testing.T) {
	runDataDriven(t, "mount_epoch_fences_previous_owner")
}

func TestUnmountRejectsFormerOwnerWithoutDroppingTasks(t *testing.T) {
	runDataDriven(t, "unmount_rejects_former_owner_without_dropping_tasks")
}

func TestClientRemountingAnotherDiskLosesOldBinding(t *testing.T) {
	runDataDriven(t, "client_remounting_another_disk_loses_old_binding")
}

func TestCapabilityNegotiationIsFailClosed(t *testing.T) {
	runDataDriven(t, "capability_negotiation_is_fail_closed")
}

func TestTasksInvisibleUntilApplied(t *testing.T) {
	runDataDriven(t, "tasks_invisible_until_applied")
}

func TestSnapshotRestoreKeepsPendingIntent(t *testing.T) {
	runDataDriven(t, "snapshot_restore_keeps_pending_intent")
}

func TestCapacityIncludesReservations(t *testing.T) {
	runDataDriven(t, "capacity_includes_reservations")
}

func TestRegistryFullFailsKeyClosedAndLeavesObject(t *testing.T) {
	runDataDriven(t, "registry_full_fails_key_closed_and_leaves_object")
}

func TestInvalidTasksAreRejected(t *testing.T) {
	runDataDriven(t, "invalid_tasks_are_rejected")
}

func TestStaleTaskCannotDeleteRecreatedKey(t *testing.T) {
	runDataDriven(t, "stale_task_cannot_delete_recreated_key")
}

func TestOverwriteQueuesOldIncarnation(t *testing.T) {
	runDataDriven(t, "overwrite_queues_old_incarnation")
}

func TestNewestCopyWithheldUntilOlderAcked(t *testing.T) {
	runDataDriven(t, "newest_copy_withheld_until_older_acked")
}

func TestBatchRemoveKeepsPerKeyResultsInOrder(t *testing.T) {
	runDataDriven(t, "batch_remove_keeps_per_key_results_in_order")
}

func TestRetireStorageDropsTasksAndAudits(t *testing.T) {
	runDataDriven(t, "retire_storage_drops_and_audits")
}

func TestDropReplicasEvictsOnlyCurrentCopies(t *testing.T) {
	runDataDriven(t, "drop_replicas_evicts_only_current_copies")
}

func TestRetriedRemoveKeepsNewerObject(t *testing.T) {
	runDataDriven(t, "retried_remove_keeps_newer_object")
}

func TestRetriedPutStartReturnsSameIncarnation(t *testing.T) {
	runDataDriven(t, "retried_putstart_returns_same_incarnation")
}

func TestForgottenSeqIsOutcomeUnknown(t *testing.T) {
	runDataDriven(t, "forgotten_seq_is_outcome_unknown")
}

func TestSessionTableFullRefusesNewClients(t *testing.T) {
	runDataDriven(t, "session_table_full_refuses_new_clients")
}

func TestSessionExpiryByEntryTime(t *testing.T) {
	runDataDriven(t, "session_expiry_by_entry_time")
}

func TestRemoveIfIncarnation(t *testing.T) {
	runDataDriven(t, "remove_if_incarnation")
}

func TestRemoveSpansGroupCommit(t *testing.T) {
	runDataDriven(t, "remove_spans_group_commit")
}

func TestSettingsAreReplicatedState(t *testing.T) {
	runDataDriven(t, "settings_are_replicated_state")
}

func TestMountFromAnotherProcessBumpsEpoch(t *testing.T) {
	runDataDriven(t, "mount_from_another_process_bumps_epoch")
}
