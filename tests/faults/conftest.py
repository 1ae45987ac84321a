"""The vLLM stand-in (tests/standins: vLLM's `/v1/completions` protocol over real HTTP, on loopback) with SmolLM2's
vocabulary, for the fault tests that drive `rollgym generate` where the engine is not what is tested."""

from __future__ import annotations

import pytest
from standins.loopback import LoopbackServer
from standins.vllm_standin import make_vllm_standin

from rollgym.engines.default_model import smollm2_dir

MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"  # the name it serves (`vllm:URL/v1#MODEL`)


@pytest.fixture(scope="module")
def standin():
    """(server, control): `control`'s switches make it slow or failing; each test resets what it flips."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(smollm2_dir()))
    app, control = make_vllm_standin(
        MODEL, max_model_len=8192, vocab_size=len(tok), eos_token_id=tok.eos_token_id, tokenizer=tok
    )
    with LoopbackServer(app) as server:
        yield server, control
