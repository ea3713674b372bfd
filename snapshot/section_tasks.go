package snapshot

// SectionTasks holds the pending local-delete tasks: one Task each, by id.
const SectionTasks = "local_delete_tasks"

var tasksSection = sectionSpec{
	name: SectionTasks, since: Format110, required: true,
	put:   putFast(SectionTasks, "snapshot.Task records", validateTask, appendTask),
	get:   getTyped(func(mr *mpReader, t *Task, _ string) error { return decodeTask(mr, t) }, validateTask),
	count: func(c *Counts) { c.Tasks++ },
}
