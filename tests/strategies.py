"""Hypothesis strategies shared by the property tests: chat conversations with tricky environment text."""

import json

from hypothesis import strategies as st

LOOKALIKES = [
    "<|im_end|>",
    "<|im_start|>",
    "<|eot_id|>",
    "<end_of_turn>",
    "<tool_call>",
    "</tool_response>",
    "<think>",
    "[gMASK]",
    "<|observation|>",
    '{"name": "x"}',
    "true",
    "null",
]
_chars = st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"), exclude_characters="<>{}")
env_text = st.lists(
    st.one_of(st.text(_chars, min_size=1, max_size=12), st.sampled_from(LOOKALIKES + ["\n", "\n\n", "  "])),
    min_size=1,
    max_size=5,
).map("".join)
assistant_text = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zs", "Zl", "Zp"), exclude_characters="<>{}"),
    min_size=1,
    max_size=12,
).map(lambda s: f"Answer {s}.")
args = st.fixed_dictionaries({"city": st.text(_chars, min_size=1, max_size=8)}, optional={"metric": st.booleans()})


@st.composite
def conversations(draw, max_calls: int, reasoning: bool, tools: bool):
    conv = []
    if draw(st.booleans()):
        conv.append({"role": "system", "content": draw(env_text)})
    conv.append({"role": "user", "content": draw(env_text)})
    n = 0
    for _ in range(draw(st.integers(1, 3))):
        k = draw(st.integers(0, max_calls)) if tools else 0
        msg = {"role": "assistant", "content": "" if k and draw(st.booleans()) else draw(assistant_text)}
        if reasoning:
            msg["reasoning_content"] = draw(assistant_text)
        if k:
            msg["tool_calls"] = [
                {
                    "id": f"call_{n + i}",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": json.dumps(draw(args))},
                }
                for i in range(k)
            ]
        conv.append(msg)
        for i in range(k):
            conv.append(
                {"role": "tool", "tool_call_id": f"call_{n + i}", "name": "get_weather", "content": draw(env_text)}
            )
        n += k
        if not k or draw(st.booleans()):
            if conv[-1]["role"] == "assistant" or max_calls:  # gemma must alternate user/assistant
                conv.append({"role": "user", "content": draw(env_text)})
    return conv
