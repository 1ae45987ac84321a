package strutil

import "testing"

func TestPadLeft(t *testing.T) {
	if got := PadLeft("42", 5, '0'); got != "00042" {
		t.Errorf("PadLeft = %q, want %q", got, "00042")
	}
	if got := PadLeft("toolong", 3, ' '); got != "toolong" {
		t.Errorf("PadLeft = %q, want %q", got, "toolong")
	}
}

func TestPadRight(t *testing.T) {
	if got := PadRight("é", 3, '.'); got != "é.." {
		t.Errorf("PadRight = %q, want %q", got, "é..")
	}
}
