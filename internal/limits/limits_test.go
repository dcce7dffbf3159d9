package limits

import (
	"reflect"
	"testing"
)

// TestTableCoversLimits: every field of Limits has exactly one entry in
// Table, and each key is unique, so no limit is served without a flag, a
// manifest key and a range.
func TestTableCoversLimits(t *testing.T) {
	var l Limits
	keys := map[string]bool{}
	for i, e := range Table {
		if keys[e.Key] {
			t.Errorf("key %s twice", e.Key)
		}
		keys[e.Key] = true
		if e.Get(l) != 0 {
			t.Errorf("%s sets a field an earlier entry sets", e.Key)
		}
		e.Set(&l, int64(i+1))
	}
	v := reflect.ValueOf(l)
	for i := range v.NumField() {
		if v.Field(i).Int() == 0 {
			t.Errorf("Limits.%s has no entry in Table", v.Type().Field(i).Name)
		}
	}
}

// TestDefaultIsValid: the defaults are in their own ranges, a NoCap
// limit's zero included.
func TestDefaultIsValid(t *testing.T) {
	if err := Default.Validate(); err != nil {
		t.Error(err)
	}
	bad := Default
	bad.MaxFiles = 0
	if err := bad.Validate(); err == nil || err.Error() != "limits are not valid: --max-files must be at least 1, got 0" {
		t.Errorf("MaxFiles 0: %v", err)
	}
	for _, e := range Table {
		if got := e.Get(Default); got != e.Default {
			t.Errorf("Default %s %d, table %d", e.Key, got, e.Default)
		}
	}
}

func TestCheck(t *testing.T) {
	lim := func(key string) Limit {
		l, ok := Lookup(key)
		if !ok {
			t.Fatalf("no limit %s", key)
		}
		return l
	}
	tests := []struct {
		key  string
		v    int64
		want string
	}{
		{"max_files", 1, ""},
		{"max_files", MaxInteger, ""},
		{"max_files", 0, "limits are not valid: --max-files must be at least 1, got 0"},
		{"max_files", MaxInteger + 1, "limits are not valid: --max-files must be at most 9007199254740991, got 9007199254740992"},
		{"max_depth", 0, ""},
		{"max_depth", -1, "limits are not valid: --max-depth must be at least 0, got -1"},
		{"max_file_bytes", 0, "limits are not valid: --max-file-bytes must be at least 1, got 0"},
		{"max_file_bytes", -1, "limits are not valid: --max-file-bytes must be at least 1, got -1"},
		{"max_scan_bytes", 16383, "limits are not valid: --max-scan-bytes must be at least 16384, got 16383"},
		{"max_read_bytes", 4, ""},
		{"max_read_bytes", 1048577, "limits are not valid: --max-read-bytes must be between 4 and 1048576, got 1048577"},
		{"max_result_bytes", 47999, "limits are not valid: --max-result-bytes must be between 48000 and 1048576, got 47999"},
	}
	for _, tc := range tests {
		err := lim(tc.key).Check(tc.v)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s %d: %q, want %q", tc.key, tc.v, got, tc.want)
		}
	}
}

func TestTexts(t *testing.T) {
	tests := []struct{ key, flag, rng, def string }{
		{"max_files", "--max-files", "1 or more", "50000"},
		{"max_depth", "--max-depth", "0 or more", "64"},
		{"max_file_bytes", "--max-file-bytes", "1 or more", "no cap"},
		{"max_read_bytes", "--max-read-bytes", "4 to 1048576", "16384"},
	}
	for _, tc := range tests {
		l, _ := Lookup(tc.key)
		if l.Flag() != tc.flag || l.Range() != tc.rng || l.DefaultText() != tc.def {
			t.Errorf("%s: %s, %s, %s; want %s, %s, %s", tc.key, l.Flag(), l.Range(), l.DefaultText(), tc.flag, tc.rng, tc.def)
		}
	}
	if got := CallTimeoutRange(); got != "100ms to 24h" {
		t.Errorf("CallTimeoutRange %q", got)
	}
}
