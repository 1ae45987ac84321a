"""Tool-call parsing for every format: round trips through the real templates, and malformed calls as data."""

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import TEMPLATES, VOCABS

from rollgym.tokenization.certify import TOOLS, _canonical_completion
from rollgym.tokenization.parsers import detect_parser, make_parser, split_reasoning
from rollgym.tokenization.parsers.base import tool_call_blocks

CALLS = [
    ("get_weather", {"city": "Paris", "metric": True}),
    ("search", {"query": "rust borrow checker", "limit": 3, "filters": {"safe": False, "ids": [1, 2]}}),
]


def _assistant(calls, content="", reasoning=None):
    msg = {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, (n, a) in enumerate(calls)
        ],
    }
    if reasoning:
        msg["reasoning_content"] = reasoning
    return msg


@pytest.mark.parametrize("vocab", VOCABS)
@pytest.mark.parametrize("template", [t for t in TEMPLATES if t != "gemma3"])
def test_rendered_tool_calls_parse_back(chat_tokenizers, vocab, template):
    """What the template renders for a tool-call turn parses back to the same calls (via the real ids)."""
    tok = chat_tokenizers[(vocab, template)]
    calls = CALLS[:1] if template == "llama3_1" else CALLS  # Llama 3.1 allows one call per turn
    reasoning = "Let me check." if tok.has_reasoning else None
    conv = [
        {"role": "user", "content": "Weather and search, please."},
        _assistant(calls, reasoning=reasoning),
        {"role": "tool", "tool_call_id": "call_0", "name": calls[0][0], "content": "ok"},
    ]
    text = _canonical_completion(tok, conv, 1, TOOLS, {})
    parsed = tok.parse_completion(tok.encode(text), TOOLS)
    assert parsed.errors == []
    got = [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in parsed.tool_calls]
    assert got == calls
    assert all(c["id"].startswith("call_") and c["type"] == "function" for c in parsed.tool_calls)
    if reasoning:
        assert parsed.message["reasoning_content"] == reasoning
    assert len({c["id"] for c in parsed.tool_calls}) == len(calls)


def test_detects_format_of_each_template():
    from support import template_text

    assert {t: detect_parser(template_text(t)) for t in TEMPLATES} == {
        "qwen2_5": "hermes",
        "qwen3": "hermes",
        "qwen3_5_think": "xml_function",
        "llama3_1": "llama_json",
        "glm4moe": "glm",
        "gemma3": None,
    }


@pytest.mark.parametrize(
    "parser,text,message",
    [
        ("hermes", '<tool_call>\n{"name": "add", "arguments": {"a": 1,}}\n</tool_call>', "not valid JSON"),
        ("hermes", '<tool_call>\n{"arguments": {}}\n</tool_call>', "no 'name'"),
        ("hermes", '<tool_call>\n["add"]\n</tool_call>', "JSON object"),
        ("hermes", '<tool_call>\n{"name": "add", "arguments": [1]}\n</tool_call>', "must be a JSON object"),
        ("hermes", '<tool_call>\n{"name": "add", "arguments": {"a": 1}}', "unterminated"),
        (
            "xml_function",
            "<tool_call>\n<function=add>\n<parameter=a>\n1\n</parameter>\n</tool_call>",
            "expected <function=NAME>",
        ),
        ("xml_function", "<tool_call>\n<function=add>\nstray text\n</function>\n</tool_call>", "outside <parameter"),
        ("glm", "<tool_call>\n<arg_key>a</arg_key><arg_value>1</arg_value></tool_call>", "function name"),
        ("glm", "<tool_call>add\n<arg_key>a</arg_key>oops</tool_call>", "outside <arg_key>"),
        ("llama_json", '{"name": "add", "parameters": {"a": 1', "not valid JSON"),
    ],
)
def test_malformed_calls_are_errors_not_exceptions(parser, text, message):
    parsed = make_parser(parser).parse(text)
    assert parsed.calls == [] and len(parsed.errors) == 1
    assert message in parsed.errors[0].message


def test_good_and_bad_calls_in_one_turn_keep_the_good_one(chat_tokenizers):
    tok = chat_tokenizers[("qwen", "qwen2_5")]
    text = (
        'I will add.\n<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>\n'
        '<tool_call>\n{"name": "add", "arguments": {"a": 1 "b": 2}}\n</tool_call>'
    )
    parsed = tok.parse_completion(tok.encode(text) + [tok.end_of_turn_id])
    assert parsed.message["content"] == "I will add."
    assert [c["function"]["name"] for c in parsed.tool_calls] == ["add"]
    assert "tool call #2 could not be parsed" in parsed.error_message()


def test_plain_answer_has_no_tool_calls(chat_tokenizers):
    for key, tok in chat_tokenizers.items():
        parsed = tok.parse_completion(tok.encode("The answer is 4.") + [tok.end_of_turn_id])
        assert parsed.message["content"] == "The answer is 4.", key
        assert "tool_calls" not in parsed.message and parsed.error_message() is None


def test_xml_and_glm_values_follow_the_schema():
    tools = [
        {
            "type": "function",
            "function": {
                "name": "f",
                "parameters": {
                    "type": "object",
                    "properties": {"s": {"type": "string"}, "n": {"type": "integer"}, "b": {"type": "boolean"}},
                },
            },
        }
    ]
    xml = "<tool_call>\n<function=f>\n<parameter=s>\n123\n</parameter>\n<parameter=n>\n123\n</parameter>\n<parameter=b>\ntrue\n</parameter>\n</function>\n</tool_call>"
    glm = "<tool_call>f\n<arg_key>s</arg_key>\n<arg_value>123</arg_value>\n<arg_key>n</arg_key>\n<arg_value>123</arg_value>\n<arg_key>b</arg_key>\n<arg_value>true</arg_value>\n</tool_call>"
    for parser, text in (("xml_function", xml), ("glm", glm)):
        parsed = make_parser(parser).parse(text, tools)
        assert parsed.calls == [("f", {"s": "123", "n": 123, "b": True})]


@pytest.mark.parametrize(
    "text,reasoning,content",
    [
        ("<think>\nplan\n</think>\n\nanswer", "plan", "answer"),
        ("plan\n</think>\n\nanswer", "plan", "answer"),  # generation prompt already opened <think>
        ("<think>\nunfinished plan", "unfinished plan", ""),  # truncated inside reasoning
        ("just an answer", None, "just an answer"),
    ],
)
def test_reasoning_split(text, reasoning, content):
    assert split_reasoning(text) == (reasoning, content)


def test_unknown_parser_lists_known():
    with pytest.raises(
        ValueError,
        match="known: cohere, deepseek, glm, hermes, hermes_or_json, kimi_k2, llama_json, pythonic, toolcall_json, "
        "xml_function",
    ):
        make_parser("mistral")


def test_hermes_or_json_also_reads_a_bare_json_call_and_leaves_other_json_as_content():
    """Qwen2.5-Coder-0.5B's habit: the call without its `<tool_call>` tags. Only a parser named for it reads that."""
    from rollgym.tokenization.families import template_text

    parser = make_parser("hermes_or_json")
    bare = '{"name": "bash", "arguments": {"command": "ls"}}'
    assert parser.parse(bare).calls == [("bash", {"command": "ls"})]
    assert make_parser("hermes").parse(bare).calls == []
    tagged = f"<tool_call>\n{bare}\n</tool_call>"
    assert parser.parse(tagged).calls == make_parser("hermes").parse(tagged).calls == [("bash", {"command": "ls"})]
    assert parser.parse('{"answer": 4}').calls == [] and parser.parse('{"answer": 4}').content == '{"answer": 4}'
    cut = parser.parse('{"name": "bash", "arguments": {"command": "ec')  # a reply cut at the token limit
    assert cut.calls == [] and cut.errors
    assert "hermes_or_json" not in {detect_parser(template_text(f"{t}.jinja")) for t in TEMPLATES}, "never detected"


def test_hermes_or_json_reads_a_stray_backslash_literally_and_still_reports_other_bad_json():
    """Qwen2.5-Coder writes shell and regex backslashes unescaped (`sed 's/x/\\1/'`); JSON refuses them, the model meant
    them literally. Only that repair is made: a call broken otherwise stays an error, and `hermes` stays strict."""
    parser = make_parser("hermes_or_json")
    stray = r"""{"name": "bash", "arguments": {"command": "echo ab | sed 's/\(a\)b/\1/' && grep -n \"x\\.y\" f"}}"""
    assert parser.parse(stray).calls == [("bash", {"command": r"""echo ab | sed 's/\(a\)b/\1/' && grep -n "x\.y" f"""})]
    tagged = f"before <tool_call>{stray}</tool_call>"
    repaired = parser.parse(tagged)
    assert repaired.calls == parser.parse(stray).calls and not repaired.errors and repaired.content == "before"
    strict = make_parser("hermes").parse(tagged)
    assert strict.errors[0].message.startswith("tool call is not valid JSON (Invalid \\escape")
    both = parser.parse(r'<tool_call>{"name": "a", "arguments": {"p": "\d"}}</tool_call><tool_call>{"x</tool_call>')
    assert both.calls == [("a", {"p": "\\d"})] and len(both.errors) == 1  # the repair fixes only what it can
    two = parser.parse(r'{"name": "a", "arguments": {"p": "\d"}}' + '\n{"name": "b", "arguments": {"p": "cut')
    assert two.calls == [("a", {"p": "\\d"})] and len(two.errors) == 1  # a call repaired beside one cut short
    unrepairable = parser.parse(r'{"name": "bash", "arguments": {"command": "\1 "unquoted" "}}')
    assert unrepairable.calls == [] and "Invalid \\escape" in unrepairable.errors[0].message, "the first error is kept"


_BLOCK = re.compile(r"<tool_call>(.*?)(</tool_call>|$)", re.DOTALL)  # the block grammar, as a regular expression


def _blocks_by_regex(text):
    start = text.find("<tool_call>")
    if start < 0:
        return text.strip(), [], []
    found = [(i, m.group(1), bool(m.group(2))) for i, m in enumerate(_BLOCK.finditer(text, start))]
    return text[:start].strip(), [(i, b) for i, b, ok in found if ok], [(i, b) for i, b, ok in found if not ok]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from(["<tool_call>", "</tool_call>", "\n", " ", "x", '{"a": 1}', "<", "tool_call>"]), max_size=12
    )
)
def test_tool_call_blocks_match_the_regular_grammar(pieces):
    """The scanner cuts blocks exactly where `<tool_call>(.*?)(</tool_call>|$)` does (nested, unterminated, trailing newline)."""
    text = "".join(pieces)
    result, blocks = tool_call_blocks(text)
    content, good, bad = _blocks_by_regex(text)
    assert (result.content, blocks, [(e.index, e.raw) for e in result.errors]) == (content, good, bad)
