package strutil

import "testing"

func TestTruncate(t *testing.T) {
	tests := []struct {
		name string
		s    string
		n    int
		want string
	}{
		{"shorter", "go", 5, "go"},
		{"exact", "gopher", 6, "gopher"},
		{"longer", "gophers everywhere", 7, "gophers"},
		{"zero", "gopher", 0, ""},
		{"negative", "gopher", -1, ""},
		{"empty", "", 3, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Truncate(tc.s, tc.n); got != tc.want {
				t.Errorf("Truncate(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
			}
		})
	}
}

func TestTruncateWithSuffix(t *testing.T) {
	tests := []struct {
		name   string
		s      string
		n      int
		suffix string
		want   string
	}{
		{"fits", "hello", 8, "...", "hello"},
		{"cut", "hello, world", 8, "...", "hello..."},
		{"suffix_only", "hello, world", 3, "...", "..."},
		{"suffix_too_long", "hello, world", 2, "...", ".."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := TruncateWithSuffix(tc.s, tc.n, tc.suffix); got != tc.want {
				t.Errorf("TruncateWithSuffix(%q, %d, %q) = %q, want %q", tc.s, tc.n, tc.suffix, got, tc.want)
			}
		})
	}
}
