"""TokenTrajectory: sampled ids kept verbatim, bridges masked, separators and stop tokens handled."""

import math

import pytest
from support import paired_tokenizer

from rollgym.tokenization import ChatTokenizer, TokenIds, TokenTrajectory, TrajectoryStateError

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
    }
]


def _ids(tok, text):
    return tok.encode(text)


def test_non_canonical_split_survives_where_retokenizing_changes_it(chat_tokenizers):
    tok = chat_tokenizers[("qwen", "qwen2_5")]
    traj = tok.start([{"role": "user", "content": "Say hello world."}])
    sampled = _ids(tok, " hello") + _ids(tok, "world") + [tok.end_of_turn_id]
    traj.add_completion(sampled, [-0.5] * len(sampled), "stop")
    traj.add_messages([{"role": "user", "content": "Again."}])
    assert traj.completion_ids[: len(sampled)] == sampled
    # What a decode-then-render loop would have trained on instead:
    msgs = [
        {"role": "user", "content": "Say hello world."},
        {"role": "assistant", "content": tok.hf.decode(sampled[:-1])},
        {"role": "user", "content": "Again."},
    ]
    rerendered = tok.encode(tok.render(msgs, add_generation_prompt=True))
    assert rerendered != traj.next_prompt_ids
    assert sampled not in [rerendered[i : i + len(sampled)] for i in range(len(rerendered))]


def test_separator_after_stop_token_goes_into_the_bridge(chat_tokenizers):
    tok = chat_tokenizers[("qwen", "qwen2_5")]
    traj = tok.start([{"role": "user", "content": "hi"}])
    traj.add_completion(_ids(tok, "Hello") + [tok.end_of_turn_id], None, "stop")
    bridge = traj.add_messages([{"role": "user", "content": "bye"}])
    assert tok.hf.decode(bridge).startswith("\n<|im_start|>user\nbye<|im_end|>\n<|im_start|>assistant\n")
    assert bridge.count(tok.end_of_turn_id) == 1  # the user turn's own end, not a duplicate of the model's


def test_glm_observation_token_is_not_duplicated(chat_tokenizers):
    tok = chat_tokenizers[("qwen", "glm4moe")]
    obs = tok.hf.convert_tokens_to_ids("<|observation|>")
    assert obs in tok.stop_token_ids
    traj = tok.start([{"role": "user", "content": "1+2?"}], tools=TOOLS)
    call = "\n<think></think>\n<tool_call>add\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n<arg_key>b</arg_key>\n<arg_value>2</arg_value>\n</tool_call>"
    traj.add_completion(_ids(tok, call) + [obs], None, "stop")
    bridge = traj.add_messages([{"role": "tool", "tool_call_id": "c0", "name": "add", "content": "3"}])
    assert obs not in bridge
    assert tok.hf.decode(bridge).startswith("\n<tool_response>\n3\n</tool_response>")


def test_each_prompt_extends_the_previous_and_masks_align(chat_tokenizers):
    tok = chat_tokenizers[("smollm2", "qwen2_5")]
    traj = tok.start([{"role": "user", "content": "Add 1 and 2, then 3."}], tools=TOOLS)
    seen = traj.next_prompt_ids
    for turn in range(3):
        completion = _ids(
            tok, f'<tool_call>\n{{"name": "add", "arguments": {{"a": {turn}, "b": 1}}}}\n</tool_call>'
        ) + [tok.end_of_turn_id]
        traj.add_completion(completion, [-0.25] * len(completion), "stop")
        assert traj.next_prompt_ids == seen + completion
        before = traj.next_prompt_ids
        traj.add_messages([{"role": "tool", "tool_call_id": f"c{turn}", "name": "add", "content": str(turn + 1)}])
        assert traj.next_prompt_ids[: len(before)] == before
        seen = traj.next_prompt_ids
    out = traj.to_rollout_dict()
    assert len(out["completion_ids"]) == len(out["logprobs"]) == len(out["env_mask"])
    assert out["prompt_ids"] + out["completion_ids"] == traj.next_prompt_ids
    for seg in traj.segments:
        mask = out["env_mask"][seg.start : seg.end]
        lps = out["logprobs"][seg.start : seg.end]
        assert all(m == (seg.kind == "completion") for m in mask)
        assert all(lp == (-0.25 if seg.kind == "completion" else 0.0) for lp in lps)
    trimmed = traj.to_rollout_dict(drop_trailing_bridge=True)
    assert trimmed["completion_ids"][-1] == tok.end_of_turn_id and trimmed["env_mask"][-1] == 1


def test_qwen3_reasoning_the_template_drops_stays_in_the_trajectory(chat_tokenizers):
    tok = chat_tokenizers[("qwen", "qwen3")]
    traj = tok.start([{"role": "user", "content": "2+2?"}])
    sampled = _ids(tok, "<think>\nTwo plus two is four.\n</think>\n\n4") + [tok.end_of_turn_id]
    traj.add_completion(sampled, None, "stop")
    traj.add_messages([{"role": "user", "content": "And 3+3?"}])
    assert traj.next_prompt_ids[len(traj.prompt_ids) :][: len(sampled)] == sampled
    full = tok.render(
        [
            {"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": "4", "reasoning_content": "Two plus two is four."},
            {"role": "user", "content": "And 3+3?"},
        ],
        add_generation_prompt=True,
    )
    assert "Two plus two" not in full  # the template drops it ...
    assert "Two plus two" in tok.hf.decode(traj.next_prompt_ids)  # ... the trajectory does not


def test_truncation_policy_end(hf_tokenizers):
    tok = ChatTokenizer(paired_tokenizer(hf_tokenizers["qwen"], "qwen2_5"), truncation="end")
    traj = tok.start([{"role": "user", "content": "hi"}])
    traj.add_completion(_ids(tok, "a very long"), None, "length")
    assert traj.ended and traj.end_reason == "truncated"
    with pytest.raises(TrajectoryStateError, match="truncated"):
        traj.add_messages([{"role": "user", "content": "go on"}])


def test_truncation_policy_close_adds_masked_end_token(hf_tokenizers):
    tok = ChatTokenizer(paired_tokenizer(hf_tokenizers["qwen"], "qwen2_5"), truncation="close")
    traj = tok.start([{"role": "user", "content": "hi"}])
    sampled = _ids(tok, "a very long")
    traj.add_completion(sampled, None, "length")
    bridge = traj.add_messages([{"role": "user", "content": "go on"}])
    assert bridge[0] == tok.end_of_turn_id and traj.segments[-1].closed_turn
    assert traj.env_mask[len(sampled)] == 0
    assert traj.next_prompt_ids == tok.encode(
        tok.render(
            [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "a very long"},
                {"role": "user", "content": "go on"},
            ],
            add_generation_prompt=True,
        )
    )


def test_other_stop_token_keeps_sampled_token_and_closes_turn(chat_tokenizers):
    """Qwen may stop on <|endoftext|>: it stays (sampled) and the template's <|im_end|> follows, masked."""
    tok = chat_tokenizers[("qwen", "qwen2_5")]
    eot = tok.hf.convert_tokens_to_ids("<|endoftext|>")
    tok2 = ChatTokenizer(tok.hf, extra_stop_token_ids=[eot])
    traj = tok2.start([{"role": "user", "content": "hi"}])
    traj.add_completion(_ids(tok2, "Hello") + [eot], None, "stop")
    bridge = traj.add_messages([{"role": "user", "content": "x"}])
    assert bridge[0] == tok2.end_of_turn_id and traj.completion_ids[len(_ids(tok2, "Hello"))] == eot


def test_messages_of_one_turn_merge_into_one_bridge(chat_tokenizers):
    tok = chat_tokenizers[("qwen", "qwen3")]
    msgs = [
        {"role": "tool", "tool_call_id": "a", "name": "add", "content": "1"},
        {"role": "tool", "tool_call_id": "b", "name": "add", "content": "2"},
    ]
    one = tok.start([{"role": "user", "content": "go"}], tools=TOOLS)
    one.add_completion(_ids(tok, "ok") + [tok.end_of_turn_id], None, "stop")
    one.add_messages(msgs)
    two = tok.start([{"role": "user", "content": "go"}], tools=TOOLS)
    two.add_completion(_ids(tok, "ok") + [tok.end_of_turn_id], None, "stop")
    two.add_messages(msgs[:1])
    two.add_messages(msgs[1:])
    assert one.next_prompt_ids == two.next_prompt_ids
    assert len(two.segments) == 2 and two.messages == one.messages


def test_bad_inputs_are_clear_errors(chat_tokenizers):
    tok = chat_tokenizers[("qwen", "qwen2_5")]
    with pytest.raises(ValueError, match="at least one message"):
        tok.start([])
    with pytest.raises(ValueError, match="end with an assistant"):
        tok.start([{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}])
    traj = tok.start([{"role": "user", "content": "x"}])
    with pytest.raises(ValueError, match="2 ids but 1 logprobs"):
        traj.add_completion([1, 2], [0.0], "stop")
    with pytest.raises(ValueError, match="not finite"):
        traj.add_completion([1, 2], [0.0, math.nan], "stop")
    with pytest.raises(ValueError, match="outside the vocabulary"):
        traj.add_completion([10**9], [0.0], "stop")
    traj.add_completion([tok.end_of_turn_id], [0.0], "stop")
    with pytest.raises(TrajectoryStateError, match="twice in a row"):
        traj.add_completion([1], [0.0], "stop")
    with pytest.raises(ValueError, match="not assistant"):
        traj.add_messages([{"role": "assistant", "content": "no"}])
    for bad, message in (
        ([1, -3], "outside the vocabulary"),
        ([1, 10**9], "outside the vocabulary"),
        ([1, 2.5], "integers"),
    ):
        with pytest.raises(ValueError, match=message):
            TokenTrajectory(tok, [], None, {}, bad)


def test_engines_trust_only_the_trajectorys_own_ids(chat_tokenizers):
    """`next_prompt_ids` is a `TokenIds` (every id checked on the way in), which engines pass unchecked;
    a plain list with the same ids is checked, and so is any bad id in one."""
    from rollgym.engines.errors import BadRequestError
    from rollgym.engines.validation import validate_prompt

    tok = chat_tokenizers[("qwen", "qwen2_5")]
    traj = tok.start([{"role": "user", "content": "x"}])
    traj.add_completion([tok.end_of_turn_id], [0.0], "stop")
    ids = traj.next_prompt_ids
    assert type(ids) is TokenIds and ids == traj.prompt_ids + traj.completion_ids
    assert ids is not traj.next_prompt_ids  # a fresh list each time: nobody else holds it
    sent = validate_prompt(ids, max_model_len=None)
    assert sent is ids  # passed on as it is: a fresh list nobody else holds, so no copy (an idle rollout held two)
    with pytest.raises(BadRequestError, match=">= 0"):
        validate_prompt(list(ids) + [-1], max_model_len=None)
    with pytest.raises(BadRequestError, match="vocab size"):  # the engine's own vocabulary is still checked
        validate_prompt(traj.next_prompt_ids, max_model_len=None, vocab_size=max(ids))


def test_chat_template_from_file_and_string(hf_tokenizers, tmp_path):
    from support import TEMPLATE_DIR

    hf = paired_tokenizer(hf_tokenizers["qwen"], "qwen3")
    from_file = ChatTokenizer(hf, chat_template=TEMPLATE_DIR / "qwen2_5.jinja")
    from_text = ChatTokenizer(hf, chat_template=(TEMPLATE_DIR / "qwen2_5.jinja").read_text())
    assert from_file.template == from_text.template != hf.chat_template
    with pytest.raises(ValueError, match="neither a Jinja template string nor an existing file"):
        ChatTokenizer(hf, chat_template=tmp_path / "missing.jinja")
    hf.save_pretrained(tmp_path / "tok")
    loaded = ChatTokenizer.from_pretrained(tmp_path / "tok")
    assert loaded.template == hf.chat_template and loaded.encode("<|im_end|>") == [151645]
