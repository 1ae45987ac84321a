"""Property tests (no Docker): head/tail capture is exact and bounded; spaces sample what they contain."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rollgym.envs.core.spaces import ChatMessageSpace, ChatMessagesSpace, message_problem
from rollgym.envs.sandbox.capture import HeadTailBuffer, clean_text, render_output


@given(st.lists(st.binary(max_size=300), max_size=30), st.integers(min_value=0, max_value=500))
def test_head_tail_buffer_keeps_exact_ends_and_counts_the_rest(chunks, limit):
    data = b"".join(chunks)
    buf = HeadTailBuffer(limit)
    for c in chunks:
        buf.feed(c)
    assert len(buf.head) + len(buf.tail) <= limit
    assert buf.total == len(data) and buf.elided == max(len(data) - limit, 0)
    if len(data) <= limit:
        assert bytes(buf.head + buf.tail) == data
    else:
        assert bytes(buf.head) == data[: limit // 2]
        assert bytes(buf.tail) == data[len(data) - (limit - limit // 2) :] if limit - limit // 2 else buf.tail == b""


@given(st.binary(max_size=500))
def test_clean_text_never_fails_and_strips_escapes(data):
    text = clean_text(data + b"\x1b[1;31mX\x1b[0m")
    assert isinstance(text, str) and "\x1b[1;31m" not in text and text.endswith("X")


def test_render_output_states_the_elided_size():
    assert render_output(b"ab", b"yz", 0) == "abyz"
    assert render_output(b"ab", b"yz", 1234) == "ab\n[... 1234 bytes of output elided ...]\nyz"


@settings(max_examples=50)
@given(st.integers(min_value=0, max_value=2**31 - 1))
def test_spaces_sample_members_for_any_seed(seed):
    action = ChatMessageSpace(("assistant",), ("bash", "submit"), seed=seed)
    obs = ChatMessagesSpace(seed=seed)
    a, o = action.sample(), obs.sample()
    assert action.contains(a) and message_problem(a, ("assistant",)) is None
    assert obs.contains(o) and 1 <= len(o) <= obs.max_length
