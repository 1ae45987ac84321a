#!/bin/bash
set -uxo pipefail
# One stream: a harness reads stdout and stderr through separate pipes, and under load their order can change
# (test output read after the end marker).
exec 2>&1
cd /testbed
git checkout bb9a75bef93633e4fc366f019f46d522ef9892e2 truncate_test.go
git apply -v - <<'EOF_114329324912'
diff --git a/truncate_test.go b/truncate_test.go
index 692db55..4a90e67 100644
--- a/truncate_test.go
+++ b/truncate_test.go
@@ -1,6 +1,9 @@
 package strutil
 
-import "testing"
+import (
+	"testing"
+	"unicode/utf8"
+)
 
 func TestTruncate(t *testing.T) {
 	tests := []struct {
@@ -46,3 +49,50 @@ func TestTruncateWithSuffix(t *testing.T) {
 		})
 	}
 }
+
+func TestTruncateMultibyte(t *testing.T) {
+	tests := []struct {
+		name string
+		s    string
+		n    int
+		want string
+	}{
+		{"accents", "héllo wörld", 4, "héll"},
+		{"cjk", "日本語のテキスト", 3, "日本語"},
+		{"emoji", "🙂🙃🙂🙃", 2, "🙂🙃"},
+		{"fits_in_characters", "naïve", 5, "naïve"},
+		{"ascii_prefix", "abc日本", 3, "abc"},
+	}
+	for _, tc := range tests {
+		t.Run(tc.name, func(t *testing.T) {
+			got := Truncate(tc.s, tc.n)
+			if got != tc.want {
+				t.Errorf("Truncate(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
+			}
+			if !utf8.ValidString(got) {
+				t.Errorf("Truncate(%q, %d) = %q is not valid UTF-8", tc.s, tc.n, got)
+			}
+		})
+	}
+}
+
+func TestTruncateWithSuffixMultibyte(t *testing.T) {
+	tests := []struct {
+		name   string
+		s      string
+		n      int
+		suffix string
+		want   string
+	}{
+		{"accents", "crème brûlée", 8, "...", "crème..."},
+		{"unicode_suffix", "hello, world", 6, "…", "hello…"},
+		{"fits_in_characters", "crème", 5, "...", "crème"},
+	}
+	for _, tc := range tests {
+		t.Run(tc.name, func(t *testing.T) {
+			if got := TruncateWithSuffix(tc.s, tc.n, tc.suffix); got != tc.want {
+				t.Errorf("TruncateWithSuffix(%q, %d, %q) = %q, want %q", tc.s, tc.n, tc.suffix, got, tc.want)
+			}
+		})
+	}
+}
EOF_114329324912
: '>>>>> Start Test Output'
go test -v ./...
: '>>>>> End Test Output'
git checkout bb9a75bef93633e4fc366f019f46d522ef9892e2 truncate_test.go
