package strutil

import "testing"

func TestToSnake(t *testing.T) {
	cases := map[string]string{
		"HTTPServerError": "http_server_error",
		"userID":          "user_id",
		"already_snake":   "already_snake",
		"Two words":       "two_words",
		"version2Beta":    "version2_beta",
	}
	for in, want := range cases {
		if got := ToSnake(in); got != want {
			t.Errorf("ToSnake(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestToKebab(t *testing.T) {
	if got := ToKebab("HTTPServerError"); got != "http-server-error" {
		t.Errorf("ToKebab = %q", got)
	}
}

func TestToCamel(t *testing.T) {
	cases := map[string]string{
		"http_server_error": "httpServerError",
		"User ID":           "userId",
		"x":                 "x",
	}
	for in, want := range cases {
		if got := ToCamel(in); got != want {
			t.Errorf("ToCamel(%q) = %q, want %q", in, got, want)
		}
	}
}
