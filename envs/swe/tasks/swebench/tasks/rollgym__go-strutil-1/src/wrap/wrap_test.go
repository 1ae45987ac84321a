package wrap

import (
	"reflect"
	"testing"
)

func TestLines(t *testing.T) {
	got := Lines("the quick brown fox jumps over the lazy dog", 10)
	want := []string{"the quick", "brown fox", "jumps over", "the lazy", "dog"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Lines = %q, want %q", got, want)
	}
}

func TestLongWord(t *testing.T) {
	got := Lines("a supercalifragilistic word", 8)
	want := []string{"a", "supercalifragilistic", "word"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Lines = %q, want %q", got, want)
	}
}

func TestString(t *testing.T) {
	if got := String("  héllo   wörld  ", 5); got != "héllo\nwörld" {
		t.Errorf("String = %q", got)
	}
}
