// Package wrap breaks text into lines no wider than a given number of characters.
package wrap

import (
	"strings"
	"unicode/utf8"
)

// Lines splits text into lines of at most width characters, breaking at spaces. A word longer
// than width gets a line of its own. Runs of whitespace between words collapse to one space.
func Lines(text string, width int) []string {
	var lines []string
	var line strings.Builder
	lineLen := 0
	for _, word := range strings.Fields(text) {
		n := utf8.RuneCountInString(word)
		if lineLen > 0 && lineLen+1+n > width {
			lines = append(lines, line.String())
			line.Reset()
			lineLen = 0
		}
		if lineLen > 0 {
			line.WriteByte(' ')
			lineLen++
		}
		line.WriteString(word)
		lineLen += n
	}
	if lineLen > 0 {
		lines = append(lines, line.String())
	}
	return lines
}

// String is Lines joined with newlines.
func String(text string, width int) string {
	return strings.Join(Lines(text, width), "\n")
}
