"""Template filters: `{% load textutils %}`."""

from django import template
from django.template.defaultfilters import stringfilter
from django.utils.safestring import mark_safe

from textutils import text

register = template.Library()


@register.filter(is_safe=True)
@stringfilter
def truncate_middle(value, length):
    """`{{ title|truncate_middle:30 }}`: at most 30 characters, the middle replaced by an ellipsis."""
    try:
        length = int(length)
    except (TypeError, ValueError):
        return value
    return text.truncate_middle(value, length)


@register.filter(is_safe=True)
@stringfilter
def initials(value):
    """`{{ name|initials }}`: "Ada Lovelace" becomes "AL"."""
    return text.initials(value)


@register.filter(is_safe=False)
def humanize_list(value, conjunction="and"):
    """`{{ tags|humanize_list:"or" }}`: "a, b or c"."""
    try:
        return text.humanize_list(value, conjunction)
    except TypeError:
        return value


@register.filter(needs_autoescape=True)
@stringfilter
def highlight(value, term, autoescape=True):
    """`{{ snippet|highlight:query }}`: wrap each case-insensitive occurrence of `query` in <mark>."""
    spans = text.find_spans(value, str(term))
    if not spans:
        return value
    pieces = []
    last = 0
    for start, end in spans:
        pieces.append(value[last:start])
        pieces.append(f"<mark>{value[start:end]}</mark>")
        last = end
    pieces.append(value[last:])
    return mark_safe("".join(pieces))
