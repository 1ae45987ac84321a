// Package strutil provides small string helpers: truncation, padding and case conversion.
//
// Lengths and widths are counted in characters (runes), not bytes, so the helpers are safe
// to use on any valid UTF-8 text.
package strutil
