package snapshot

// SectionTasks holds the pending local-delete tasks: one Task each, by id.
const SectionTasks = "local_delete_tasks"

var tasksSection = sectionSpec{
	name: SectionTasks, since: Format110, required: true,
	// Tasks are appended by hand (appendTask), like objects.
	put: putTyped(SectionTasks, "snapshot.Task records",
		func(_ *Writer, t *Task) error { return validateTask(t) },
		func(w *Writer, t *Task) error { w.buf = appendTask(w.buf, t); return nil }),
	get:   getTyped(func(mr *mpReader, t *Task, _ string) error { return decodeTask(mr, t) }, validateTask),
	count: func(c *Counts) { c.Tasks++ },
}
