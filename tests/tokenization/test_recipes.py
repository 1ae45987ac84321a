"""Render recipes (bridges and prompts): a compiled shape gives exactly the full render's text and ids, and a template that
looks inside a field value (or transforms it) is never compiled; the same for initial prompts."""

import pickle
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import env_text
from support import TEMPLATES, VOCABS

from rollgym.tokenization import ChatTokenizer
from rollgym.tokenization.certify import TOOLS

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
ids = st.text(st.characters(codec="ascii", categories=("L", "N")), min_size=1, max_size=10)


def quoted_strings(template: str) -> list[str]:
    """The template's quoted literals (found by a regex, independently of how recipes pick their probes)."""
    found = re.findall(r"'([^'\n]{1,40})'|\"([^\"\n]{1,40})\"", template)
    return sorted({a or b for a, b in found})


def contents(template: str):
    """Environment text, the template's own words, and mixtures of both (words a template may test for)."""
    words = st.sampled_from(quoted_strings(template))
    return st.one_of(env_text, words, st.lists(st.one_of(env_text, words), min_size=2, max_size=4).map("".join))


@st.composite
def env_replies(draw, tool_role: bool, text):
    """What an environment sends back in one turn: tool results, a user message, or both."""
    out = []
    if tool_role:
        for _ in range(draw(st.integers(0, 3))):
            out.append({"role": "tool", "tool_call_id": "call_" + draw(ids), "name": draw(ids), "content": draw(text)})
    if not out or draw(st.booleans()):
        out.append({"role": "user", "content": draw(text)})
    return out


def without_recipes(tok: ChatTokenizer) -> ChatTokenizer:
    return ChatTokenizer(tok.hf, tok.template, recipes=False)


@pytest.mark.parametrize("vocab", VOCABS)
@pytest.mark.parametrize("template", TEMPLATES)
def test_recipes_give_the_full_renders_text_and_ids(chat_tokenizers, vocab, template):
    tok = chat_tokenizers[(vocab, template)]
    reference = without_recipes(tok)
    stop = tok.stop_token_ids[0]
    options = [{}, {"enable_thinking": False}] if tok.has_reasoning else [{}]

    @SETTINGS
    @given(reply=env_replies(tok.tool_role_supported, contents(tok.template)), kwargs=st.sampled_from(options))
    def check(reply, kwargs):
        try:
            expected = reference._closing(reply, None, kwargs)
        except Exception as exc:  # noqa: BLE001 - the template refuses this conversation: so must the recipe path
            with pytest.raises(type(exc)):
                tok._closing(reply, None, kwargs)
            return
        assert tok._closing(reply, None, kwargs) == expected
        assert tok.bridge(reply, stop, None, kwargs).ids == reference.bridge(reply, stop, None, kwargs).ids

    check()


@pytest.mark.parametrize("vocab", VOCABS)
@pytest.mark.parametrize("template", TEMPLATES)
def test_prompt_recipes_give_the_full_renders_ids(chat_tokenizers, vocab, template):
    tok = chat_tokenizers[(vocab, template)]
    reference = without_recipes(tok)
    tools = TOOLS if tok.supports_tools else None
    options = [{}, {"enable_thinking": False}] if tok.has_reasoning else [{}]

    @SETTINGS
    @given(
        system=st.none() | contents(tok.template),
        user=contents(tok.template),
        with_tools=st.booleans(),
        kwargs=st.sampled_from(options),
    )
    def check(system, user, with_tools, kwargs):
        messages = ([{"role": "system", "content": system}] if system is not None else []) + [
            {"role": "user", "content": user}
        ]
        chosen = tools if with_tools else None
        try:
            expected = reference.start(messages, chosen, **kwargs).prompt_ids
        except Exception as exc:  # noqa: BLE001 - whatever the reference raises, the recipe path must raise too
            with pytest.raises(type(exc)):
                tok.start(messages, chosen, **kwargs)
            return
        assert tok.start(messages, chosen, **kwargs).prompt_ids == expected
        assert tok.render_prompt(messages, chosen, **kwargs) == reference.render(messages, chosen, True, **kwargs)

    check()


def test_templates_that_read_the_clock_get_no_recipes(smollm2_hf_tokenizer):
    tok = ChatTokenizer(smollm2_hf_tokenizer, template_with("{{ strftime_now('%Y') }} {{ message.content }}"))
    assert tok._recipes is None and tok._prompt_recipes is None
    reply = [{"role": "tool", "tool_call_id": "c", "name": "f", "content": "7"}]
    assert tok._closing(reply, None, {})[1].startswith("<|im_end|>\n<|im_start|>tool\n20")


def test_tool_key_order_is_part_of_the_prompt_shape(smollm2_hf_tokenizer):
    tok = ChatTokenizer(smollm2_hf_tokenizer, "{{ tools | tojson }}{% for m in messages %}{{ m.content }}{% endfor %}")
    messages = [{"role": "user", "content": "hi"}]
    one = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    other = [{"function": {"name": "f", "parameters": {}}, "type": "function"}]  # same content, other key order
    assert tok.render_prompt(messages, one).startswith('[{"type": "function"')
    assert tok.render_prompt(messages, other) == without_recipes(tok).render(messages, other, True)
    assert tok.render_prompt(messages, other).startswith('[{"function"')


def test_glm_nothink_is_seen_through_its_macro(chat_tokenizers):
    """GLM-4.5 appends `/nothink` to a user message unless `visible_text(content)` already ends with it:
    a test on a macro's output, which tracing cannot follow; the template's own words as probes catch it."""
    tok = chat_tokenizers[("qwen", "glm4moe")]
    for content in ["go on", "go on /nothink"]:
        reply = [{"role": "user", "content": content}]
        assert tok._closing(reply, None, {"enable_thinking": False}) == without_recipes(tok)._closing(
            reply, None, {"enable_thinking": False}
        )
    assert (
        tok._closing([{"role": "user", "content": "x /nothink"}], None, {"enable_thinking": False})[1].count("/nothink")
        == 1
    )


def test_which_shipped_shapes_compile(chat_tokenizers):
    """Tracing sees what each template does with a field; probes see what tracing cannot."""
    tool = [{"role": "tool", "tool_call_id": "call_1", "name": "add", "content": "3"}]
    user = [{"role": "user", "content": "go on"}]

    def status(template, messages):
        tok = chat_tokenizers[("qwen", template)]
        tok._closing(messages, None, {})
        return tok._recipes.explain()[repr(tok._recipes.shape(messages, "")[0])]

    assert status("qwen2_5", tool) == "compiled"
    assert status("qwen2_5", user) == "compiled"
    assert status("glm4moe", tool) == "compiled"
    assert status("qwen3", tool) == "compiled"
    assert "looks inside message fields (.startswith)" in status("qwen3", user)  # multi-step tool detection
    assert "__iter__" in status("llama3_1", tool)  # `content is iterable` decides on tojson
    assert "renders field value" in status("qwen3_5_think", tool)  # a trim after a macro: only a probe sees it


BASE = (
    "{%- for message in messages %}{{ '<|im_start|>' + message.role + '\\n' }}"
    "{%- if message.role == 'tool' %}FIELD{%- else %}{{ message.content }}{%- endif %}{{ '<|im_end|>\\n' }}"
    "{%- endfor %}{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}"
)


def template_with(field: str) -> str:
    return BASE.replace("FIELD", field)


REFUSED = {
    "{{ message.content | trim }}": "looks inside",
    "{{ message.content | tojson }}": "transforms field values",
    "{{ message.content | int }}": "rendered in full",  # int() fails on a placeholder; any reason will do
    "{{ (message.content ~ '') | trim }}": "renders field value",
    "{{ message.content[:3] }}": "__getitem__",
    "{{ message.content | length }}": "__len__",
    "{{ 'x' if message.content == 'x' else message.content }}": "__eq__",
    "{{ message.content | e }}": "looks inside",
    "{{ message.content | upper }}": ".upper",
    "{{ message.content | replace('z', 'q') }}": ".replace",
    "{{ ('<r>' + message.content) | replace('z', 'q') }}": ".replace",
    "{{ [message.content] | join | replace('z', 'q') }}": "renders field value",
    "{% if message.content %}{{ message.content }}{% endif %}": "__bool__",
    "{{ message.content | pprint }}": "looks inside",
    "{{ message.name }}: {{ message.content if message.name != 'f' else '' }}": "__ne__",
    # Jinja makes a new plain string (tracing loses it): the template's own words, as probes, catch the test.
    "{% set c = message.content ~ '' %}{{ 'PONG' if c == 'ping' else c }}": "'ping'",
    "{% set c = message.content ~ '' %}{{ c.split('</think>')[-1] }}": "</think>",
    "{{ '%.6000s' | format(message.content) }}": "'yyyyyyyyyy",  # longer than every generic probe
    "{% macro v(x) %}{{ x }}{% endmacro %}{% set c = v(message.content) %}{{ c if '<hide>' not in c else '' }}": "<hide>",
    "{% set c = [message.content] | join %}{{ 'R' if c.startswith('<r>') else c }}": "<r>",
    "{% set c %}{{ message.content }}{% endset %}{{ 'E' if c | length == 0 else c }}": "renders field value",
}


@pytest.mark.parametrize("field", list(REFUSED))
def test_templates_that_look_inside_a_field_are_rendered_in_full(smollm2_hf_tokenizer, field):
    tok = ChatTokenizer(smollm2_hf_tokenizer, template_with(field))
    reference = without_recipes(tok)
    for content in ["zebra  ", " 12", "x", "", "a" * 300]:
        reply = [{"role": "tool", "tool_call_id": "c", "name": "f", "content": content}]
        assert tok._closing(reply, None, {}) == reference._closing(reply, None, {})
    (status,) = tok._recipes.explain().values()
    assert status.startswith("rendered in full") and REFUSED[field] in status, status


def test_a_verbatim_template_compiles_and_skips_the_renderer(smollm2_hf_tokenizer, monkeypatch):
    tok = ChatTokenizer(smollm2_hf_tokenizer, template_with("{{ '<r>' + message.content + '</r>' }}"))
    reference = without_recipes(tok)
    reply = [{"role": "tool", "tool_call_id": "c1", "name": "f", "content": "first"}]
    tok._closing(reply, None, {})  # compiles the shape
    assert list(tok._recipes.explain().values()) == ["compiled"]

    calls = []
    monkeypatch.setattr(tok._renderer, "render", lambda *a, **k: calls.append(a))
    monkeypatch.setattr(tok._renderer, "render_plain", lambda *a, **k: calls.append(a))
    for content in ["second", "  spaced \n", "<|im_end|>", "ünï"]:
        reply = [{"role": "tool", "tool_call_id": "c2", "name": "g", "content": content}]
        head, closing = tok._closing(reply, None, {})
        assert closing == f"<|im_end|>\n<|im_start|>tool\n<r>{content}</r><|im_end|>\n<|im_start|>assistant\n"
        assert (head, closing) == reference._closing(reply, None, {})
    assert calls == []  # every bridge came from the recipe


def test_recipes_can_be_turned_off_and_survive_pickling(chat_tokenizers):
    tok = chat_tokenizers[("smollm2", "qwen2_5")]
    off = without_recipes(tok)
    reply = [{"role": "tool", "tool_call_id": "c", "name": "f", "content": "7"}]
    off._closing(reply, None, {})
    assert off._recipes is None
    copy = pickle.loads(pickle.dumps(tok))
    assert copy._recipes is not None and copy._recipes.explain() == {}  # rebuilt, not shipped
    assert copy._closing(reply, None, {}) == off._closing(reply, None, {})
    assert pickle.loads(pickle.dumps(off))._recipes is None


def test_non_text_fields_are_rendered_in_full(chat_tokenizers):
    from rollgym.tokenization.messages import normalize_for_template

    parts = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    for template in ("qwen2_5", "qwen3_5_think"):  # one refuses content parts, one renders them
        tok = chat_tokenizers[("qwen", template)]
        assert tok._recipes.shape(normalize_for_template(parts), "") is None
        assert outcome(tok, parts) == outcome(without_recipes(tok), parts)


def outcome(tok, messages):
    try:
        return tok._closing(messages, None, {})
    except Exception as exc:  # noqa: BLE001 - the outcome compared is the error itself
        return type(exc).__name__, str(exc)
