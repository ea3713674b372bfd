package snapshot

import "sexton/api"

// SectionMetadata holds the objects: one Object per incarnation, by key
// then incarnation.
const SectionMetadata = "metadata"

var metadataSection = sectionSpec{
	name: SectionMetadata, since: Format100, required: true,
	// Objects are appended by hand (appendObject): the bytes equal
	// msgpack's reflection encoding with compact ints.
	put: putTyped(SectionMetadata, "snapshot.Object records",
		func(_ *Writer, o *Object) error { return validateObject(o) },
		func(w *Writer, o *Object) error { w.buf = appendObject(w.buf, o); return nil }),
	get: func(mr *mpReader, format string) (any, error) {
		blk := new(objectBlock)
		if err := decodeObject(mr, &blk.o, &blk.rep, format); err != nil {
			return nil, err
		}
		if err := validateObject(&blk.o); err != nil {
			return nil, corrupt(err)
		}
		return &blk.o, nil
	},
	count: func(c *Counts) { c.Objects++ },
}

// objectBlock allocates an object and its single replica in one go.
type objectBlock struct {
	o   Object
	rep [1]api.ReplicaDescriptor
}
