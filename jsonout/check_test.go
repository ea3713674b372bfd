package jsonout

import (
	"strings"
	"testing"
	"time"

	"sexton/api"
)

// Check names the first key that is not snake_case and the first null by
// their path; Encode refuses what Check refuses.
func TestCheckNamesTheOffender(t *testing.T) {
	for in, want := range map[string]string{
		`{"tasks":[{"key":"k","last_error":"x"}]}`: "",
		`{"tasks":[{"Key":"k"}]}`:                  `$.tasks[0]: key "Key" is not snake_case`,
		`{"tasks":null}`:                           "$.tasks is null",
		`{"a":{"b_c":[1,null]}}`:                   "$.a.b_c[1] is null",
	} {
		err := Check([]byte(in))
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v, want accepted", in, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
	if _, err := Encode(Tasks{}); err == nil || !strings.Contains(err.Error(), "$.tasks is null") {
		t.Errorf("Encode of a nil list: %v, want refused", err)
	}
	if b, err := Encode(TasksOf(api.ListTasksResponse{}, time.Time{})); err != nil || !strings.Contains(string(b), `"tasks": []`) {
		t.Errorf("Encode(TasksOf(none)) = %s, %v", b, err)
	}
}
