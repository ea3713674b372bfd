package api

import (
	"reflect"
	"strings"
	"testing"
)

// TestSettingsTableCoversSettings: every field of Settings has exactly one
// row, under the field's msgpack key and json name, whose Get and Set
// reach that field and no other; a field without a row would be dropped
// by the snapshot decoder and never checked, shown or set.
func TestSettingsTableCoversSettings(t *testing.T) {
	typ := reflect.TypeFor[Settings]()
	if len(SettingsTable) != typ.NumField() {
		t.Fatalf("SettingsTable has %d rows, Settings %d fields", len(SettingsTable), typ.NumField())
	}
	seen := map[string]bool{}
	for i := range typ.NumField() {
		f := typ.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("msgpack"), ",")
		sp, ok := SettingByKey(key)
		if !ok {
			t.Errorf("field %s (msgpack %q) has no row", f.Name, key)
			continue
		}
		if seen[key] {
			t.Errorf("two rows for %q", key)
		}
		seen[key] = true
		if j, _, _ := strings.Cut(f.Tag.Get("json"), ","); j != sp.JSON {
			t.Errorf("row %q: JSON %q, field's json tag %q", key, sp.JSON, j)
		}
		var s Settings
		sp.Set(&s, 7)
		v := reflect.ValueOf(s)
		for k := range typ.NumField() {
			want := int64(0)
			if k == i {
				want = 7
			}
			if got := v.Field(k).Int(); got != want {
				t.Errorf("row %q: Set(7) left field %s at %d, want %d", key, typ.Field(k).Name, got, want)
			}
		}
		if got := sp.Get(&s); got != 7 {
			t.Errorf("row %q: Get after Set(7) = %d", key, got)
		}
		if sp.Default < sp.Min || sp.Default > sp.Max || sp.Min < 1 {
			t.Errorf("row %q: default %d outside %d..%d, or min below 1", key, sp.Default, sp.Min, sp.Max)
		}
	}
}

// TestSettingsCheckAndMerge: a value outside a row's bounds is refused
// with the setting named, zero passes, and Merged keeps what a change
// leaves zero.
func TestSettingsCheckAndMerge(t *testing.T) {
	for _, sp := range SettingsTable {
		var s Settings
		sp.Set(&s, sp.Max+1)
		if err := s.Check(); err == nil || !strings.Contains(err.Message, sp.Label) {
			t.Errorf("%s = max+1: %v, want a refusal naming %q", sp.Flag, err, sp.Label)
		}
		sp.Set(&s, sp.Min-1)
		if err := s.Check(); (sp.Min-1 != 0) != (err != nil) {
			t.Errorf("%s = min-1 (%d): %v", sp.Flag, sp.Min-1, err)
		}
		sp.Set(&s, sp.Max)
		if err := s.Check(); err != nil {
			t.Errorf("%s = max: %v", sp.Flag, err)
		}
		got := DefaultSettings().Merged(s)
		for _, o := range SettingsTable {
			want := o.Default
			if o.Key == sp.Key {
				want = sp.Max
			}
			if v := o.Get(&got); v != want {
				t.Errorf("defaults merged with %s=max: %s = %d, want %d", sp.Flag, o.Flag, v, want)
			}
		}
	}
	if err := (Settings{}).Check(); err != nil {
		t.Errorf("zero settings: %v", err)
	}
}
