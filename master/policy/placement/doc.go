// Package placement is where the master leader puts a put's replicas:
// distinct live segments of one pool, the pool and then each segment drawn
// weighted by free capacity (Place), the first replica on a segment the
// request prefers when one can take it (PlacePreferred). Every decision
// takes the time and the random source as arguments and does no I/O;
// TestPlacement runs it on a fake clock from testdata/*.txt.
package placement
