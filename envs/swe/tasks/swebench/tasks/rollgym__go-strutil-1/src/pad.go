package strutil

import (
	"strings"
	"unicode/utf8"
)

// PadLeft returns s preceded by as many copies of pad as make it width characters long.
func PadLeft(s string, width int, pad rune) string {
	missing := width - utf8.RuneCountInString(s)
	if missing <= 0 {
		return s
	}
	return strings.Repeat(string(pad), missing) + s
}

// PadRight returns s followed by as many copies of pad as make it width characters long.
func PadRight(s string, width int, pad rune) string {
	missing := width - utf8.RuneCountInString(s)
	if missing <= 0 {
		return s
	}
	return s + strings.Repeat(string(pad), missing)
}
