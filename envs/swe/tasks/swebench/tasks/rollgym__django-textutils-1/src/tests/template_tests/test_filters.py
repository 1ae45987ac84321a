from django.template import Context, Template
from django.test import SimpleTestCase
from django.utils.safestring import mark_safe


def render(template_string, **context):
    return Template("{% load textutils %}" + template_string).render(Context(context))


class TruncateMiddleFilterTests(SimpleTestCase):
    def test_truncate_middle(self):
        self.assertEqual(render("{{ v|truncate_middle:9 }}", v="internationalization"), "inte\u2026tion")

    def test_short_value_unchanged(self):
        self.assertEqual(render("{{ v|truncate_middle:30 }}", v="short"), "short")

    def test_invalid_length(self):
        self.assertEqual(render('{{ v|truncate_middle:"x" }}', v="unchanged"), "unchanged")

    def test_escapes_value(self):
        self.assertEqual(render("{{ v|truncate_middle:30 }}", v="<b>bold</b>"), "&lt;b&gt;bold&lt;/b&gt;")


class InitialsFilterTests(SimpleTestCase):
    def test_initials(self):
        self.assertEqual(render("{{ v|initials }}", v="Ada Lovelace"), "AL")

    def test_empty(self):
        self.assertEqual(render("{{ v|initials }}", v=""), "")


class HumanizeListFilterTests(SimpleTestCase):
    def test_and(self):
        self.assertEqual(render("{{ v|humanize_list }}", v=["red", "green", "blue"]), "red, green and blue")

    def test_conjunction(self):
        self.assertEqual(render('{{ v|humanize_list:"or" }}', v=["tea", "coffee"]), "tea or coffee")

    def test_escapes_items(self):
        self.assertEqual(render("{{ v|humanize_list }}", v=["<a>", "b"]), "&lt;a&gt; and b")


class HighlightFilterTests(SimpleTestCase):
    def test_highlight(self):
        self.assertEqual(
            render("{{ v|highlight:q }}", v="Django is a web framework", q="django"),
            "<mark>Django</mark> is a web framework",
        )

    def test_every_occurrence(self):
        self.assertEqual(
            render("{{ v|highlight:q }}", v="Tea for two, tea for me", q="tea"),
            "<mark>Tea</mark> for two, <mark>tea</mark> for me",
        )

    def test_no_match_is_escaped(self):
        self.assertEqual(render("{{ v|highlight:q }}", v="<i>nothing</i>", q="zzz"), "&lt;i&gt;nothing&lt;/i&gt;")

    def test_autoescape_off(self):
        self.assertEqual(
            render("{% autoescape off %}{{ v|highlight:q }}{% endautoescape %}", v="<i>web</i>", q="web"),
            "<i><mark>web</mark></i>",
        )

    def test_safe_input(self):
        self.assertEqual(
            render("{{ v|highlight:q }}", v=mark_safe("<em>Django</em> rocks"), q="rocks"),
            "<em>Django</em> <mark>rocks</mark>",
        )
