package master

import "sexton/api"

// checkBatchLen refuses a batch request of more than max items.
func checkBatchLen(n, max int, what string) error {
	if n > max {
		return api.Errorf(api.CodeInvalidParams, "%d %s exceed the batch limit %d", n, what, max)
	}
	return nil
}

// checkRefs refuses a request naming more than api.MaxBatchKeys
// incarnations, or one with an invalid key.
func checkRefs(refs []api.ObjectRef) error {
	if len(refs) > api.MaxBatchKeys {
		return api.Errorf(api.CodeInvalidParams, "%d refs exceed %d", len(refs), api.MaxBatchKeys)
	}
	for _, r := range refs {
		if err := api.ValidKey(r.Key); err != nil {
			return err
		}
	}
	return nil
}

// batchSubset is the part of a batch request that is proposed: the items
// that passed the leader's checks, each with its index in the request, so
// the per-item answers of the entry map back to request order. Items that
// failed are answered in place and never proposed; which they are depends
// on the request alone, so a repeat proposes the same subset.
type batchSubset[T any] struct {
	items []T
	at    []int // at[j] is the request index of items[j]
}

func newBatchSubset[T any](capacity int) *batchSubset[T] {
	return &batchSubset[T]{items: make([]T, 0, capacity), at: make([]int, 0, capacity)}
}

// add records item as the request's item i.
func (s *batchSubset[T]) add(i int, item T) {
	s.items = append(s.items, item)
	s.at = append(s.at, i)
}

// checkAnswers refuses an entry's answer that does not have one item per
// proposed item.
func (s *batchSubset[T]) checkAnswers(got int, what string) error {
	if got != len(s.items) {
		return api.Errorf(api.CodeInternal, "%s result of %d items for %d proposed", what, got, len(s.items))
	}
	return nil
}
