package holder

import "testing"

// A bucket's dead ratio is its dead bytes' share, 0 for an empty bucket;
// the data port's status reports the same.
func TestBucketStatDeadRatio(t *testing.T) {
	for _, c := range []struct {
		b    BucketStat
		want float64
	}{
		{BucketStat{}, 0},
		{BucketStat{LiveBytes: 300, DeadBytes: 100}, 0.25},
		{BucketStat{DeadBytes: 5, DeadCount: 1}, 1},
	} {
		if got := c.b.DeadRatio(); got != c.want {
			t.Errorf("%+v: DeadRatio() = %v, want %v", c.b, got, c.want)
		}
		if got := bucketStatus(c.b).DeadRatio; got != c.want {
			t.Errorf("%+v: status dead ratio %v, want %v", c.b, got, c.want)
		}
	}
}
