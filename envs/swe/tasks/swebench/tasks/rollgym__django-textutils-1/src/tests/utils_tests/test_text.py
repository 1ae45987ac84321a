from django.test import SimpleTestCase
from django.utils.functional import lazystr
from textutils import text


class TruncateMiddleTests(SimpleTestCase):
    def test_even_length(self):
        self.assertEqual(text.truncate_middle("abcdefghij", 6), "abc\u2026ij")

    def test_odd_length(self):
        self.assertEqual(text.truncate_middle("internationalization", 9), "inte\u2026tion")

    def test_fits(self):
        self.assertEqual(text.truncate_middle("abc", 3), "abc")

    def test_tiny_length(self):
        self.assertEqual(text.truncate_middle("abcdef", 1), "a")
        self.assertEqual(text.truncate_middle("abcdef", 0), "")

    def test_custom_marker(self):
        self.assertEqual(text.truncate_middle("abcdefghij", 7, marker="..."), "ab...ij")

    def test_lazy(self):
        self.assertEqual(text.truncate_middle(lazystr("abcdefghij"), 6), "abc\u2026ij")


class InitialsTests(SimpleTestCase):
    def test_initials(self):
        self.assertEqual(text.initials("grace brewster murray hopper"), "GBMH")

    def test_separator(self):
        self.assertEqual(text.initials("Alan Turing", separator="."), "A.T")


class HumanizeListTests(SimpleTestCase):
    def test_lengths(self):
        self.assertEqual(text.humanize_list([]), "")
        self.assertEqual(text.humanize_list(["a"]), "a")
        self.assertEqual(text.humanize_list(["a", "b"]), "a and b")
        self.assertEqual(text.humanize_list(["a", "b", "c"]), "a, b and c")

    def test_non_strings(self):
        self.assertEqual(text.humanize_list([1, 2, 3], "or"), "1, 2 or 3")


class FindSpansTests(SimpleTestCase):
    def test_case_insensitive(self):
        self.assertEqual(text.find_spans("Tea for two, tea for me", "TEA"), [(0, 3), (13, 16)])

    def test_regex_characters(self):
        self.assertEqual(text.find_spans("1+1=2, 1+1", "1+1"), [(0, 3), (7, 10)])

    def test_empty_term(self):
        self.assertEqual(text.find_spans("anything", ""), [])
