package strutil

// Truncate returns s shortened to at most n characters. It returns s unchanged when it is
// already short enough, and "" when n <= 0.
func Truncate(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// TruncateWithSuffix is like Truncate, but a string that has to be shortened ends with suffix
// (for example "..."), and the result, suffix included, is at most n characters long.
func TruncateWithSuffix(s string, n int, suffix string) string {
	if len(s) <= n {
		return s
	}
	keep := n - len(suffix)
	if keep <= 0 {
		return Truncate(suffix, n)
	}
	return Truncate(s, keep) + suffix
}
