package snapshot

import "sexton/api"

// SectionMetadata holds the objects: one Object per incarnation, by key
// then incarnation.
const SectionMetadata = "metadata"

var metadataSection = sectionSpec{
	name: SectionMetadata, since: Format100, required: true,
	put: putFast(SectionMetadata, "snapshot.Object records", validateObject, appendObject),
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
