#!/bin/bash
set -uxo pipefail
# One stream: a harness reads stdout and stderr through separate pipes, and under load their order can change
# (test output read after the end marker).
exec 2>&1
cd /testbed
git checkout 3a99d85f839688bd013d12b991b20b5cf35d8e56 tests/template_tests/test_filters.py
git apply -v - <<'EOF_114329324912'
diff --git a/tests/template_tests/test_filters.py b/tests/template_tests/test_filters.py
index 144519f..7fb5c19 100644
--- a/tests/template_tests/test_filters.py
+++ b/tests/template_tests/test_filters.py
@@ -67,3 +67,18 @@ class HighlightFilterTests(SimpleTestCase):
             render("{{ v|highlight:q }}", v=mark_safe("<em>Django</em> rocks"), q="rocks"),
             "<em>Django</em> <mark>rocks</mark>",
         )
+
+    def test_escapes_value(self):
+        self.assertEqual(
+            render("{{ v|highlight:q }}", v="<script>alert('x')</script> search", q="search"),
+            "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; <mark>search</mark>",
+        )
+
+    def test_escapes_match(self):
+        self.assertEqual(render("{{ v|highlight:q }}", v="fish & chips", q="&"), "fish <mark>&amp;</mark> chips")
+
+    def test_autoescape_off_keeps_markup(self):
+        self.assertEqual(
+            render("{% autoescape off %}{{ v|highlight:q }}{% endautoescape %}", v="a < b", q="b"),
+            "a < <mark>b</mark>",
+        )
EOF_114329324912
: '>>>>> Start Test Output'
./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 template_tests.test_filters
: '>>>>> End Test Output'
git checkout 3a99d85f839688bd013d12b991b20b5cf35d8e56 tests/template_tests/test_filters.py
