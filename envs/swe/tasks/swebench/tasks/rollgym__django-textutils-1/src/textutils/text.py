"""Plain-text helpers. They take and return `str`; the template filters in
`textutils.templatetags.textutils` add HTML escaping on top of them."""

import re

from django.utils.functional import keep_lazy_text

ELLIPSIS = "\u2026"


@keep_lazy_text
def truncate_middle(value, length, marker=ELLIPSIS):
    """Shorten `value` to at most `length` characters by replacing its middle with `marker`.

    >>> truncate_middle("internationalization", 9)
    'inte…tion'
    """
    value = str(value)
    length = int(length)
    if length <= 0:
        return ""
    if len(value) <= length:
        return value
    if length <= len(marker):
        return value[:length]
    keep = length - len(marker)
    head = (keep + 1) // 2
    tail = keep - head
    return value[:head] + marker + (value[-tail:] if tail else "")


@keep_lazy_text
def initials(value, separator=""):
    """The upper-cased first letter of each word: `initials("Ada Lovelace")` is `"AL"`."""
    return separator.join(word[0].upper() for word in re.findall(r"\w+", str(value)))


def humanize_list(items, conjunction="and"):
    """Join `items` for a sentence: `["a", "b", "c"]` gives `"a, b and c"`."""
    items = [str(item) for item in items]
    if not items:
        return ""
    if len(items) == 1:
        return items[0]
    return f"{', '.join(items[:-1])} {conjunction} {items[-1]}"


def find_spans(text, term):
    """The (start, end) offsets of each case-insensitive, non-overlapping occurrence of `term`."""
    if not term:
        return []
    return [match.span() for match in re.finditer(re.escape(term), text, re.IGNORECASE)]
