from __future__ import annotations

import pytest


@pytest.fixture
def trainable_vllm(real_vllm, smollm2_fp32):
    """The session's real vLLM server for a test that changes its weights: its own checkpoint is reloaded after, and
    checked against the float32 reference, so the tests after it see the model they expect."""
    from support import vllm as vllm_support

    yield real_vllm
    vllm_support.restore_checkpoint(real_vllm)
    restored = vllm_support.server_probe(real_vllm.base_url)
    reference = vllm_support.model_probe(smollm2_fp32)
    assert max(abs(a - b) for a, b in zip(restored, reference, strict=True)) < 1e-4, (
        "the server's weights were not restored"
    )
