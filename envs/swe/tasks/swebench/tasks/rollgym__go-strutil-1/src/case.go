package strutil

import (
	"strings"
	"unicode"
)

// words splits s into words at spaces, punctuation and case changes:
// "HTTPServerError" gives ["HTTP", "Server", "Error"], "user_id" gives ["user", "id"].
func words(s string) []string {
	var out []string
	rs := []rune(s)
	start := -1
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			if start >= 0 {
				out = append(out, string(rs[start:i]))
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
			continue
		}
		prev := rs[i-1]
		nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
		if unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower)) {
			out = append(out, string(rs[start:i]))
			start = i
		}
	}
	if start >= 0 {
		out = append(out, string(rs[start:]))
	}
	return out
}

// ToSnake converts s to snake_case: "HTTPServerError" becomes "http_server_error".
func ToSnake(s string) string {
	return joinLower(words(s), "_")
}

// ToKebab converts s to kebab-case: "HTTPServerError" becomes "http-server-error".
func ToKebab(s string) string {
	return joinLower(words(s), "-")
}

// ToCamel converts s to lowerCamelCase: "http_server_error" becomes "httpServerError".
func ToCamel(s string) string {
	ws := words(s)
	for i, w := range ws {
		w = strings.ToLower(w)
		if i > 0 {
			rs := []rune(w)
			rs[0] = unicode.ToUpper(rs[0])
			w = string(rs)
		}
		ws[i] = w
	}
	return strings.Join(ws, "")
}

func joinLower(ws []string, sep string) string {
	for i, w := range ws {
		ws[i] = strings.ToLower(w)
	}
	return strings.Join(ws, sep)
}
