"""Runs in AReaL's own venv (.ci/trainers-up areal): rollgym's `RollgymWorkflow` is a real AReaL `RolloutWorkflow`,
handed an `InferenceEngine` (AReaL's abstract class) whose `agenerate` builds AReaL's own `ModelResponse` from AReaL's
own `ModelRequest` as its remote engines do (areal/infra/remote_inf_engine.py:781-946: `input_tokens`, the output ids,
their logprobs, one weights version per output id, the stop reason); sampling is the real SmolLM2-135M (rollgym's
in-process engine) or a scripted tool-calling group. Each trajectory goes through AReaL's `check_trajectory_format`
(what its `WorkflowExecutor` runs on every `arun_episode` result) and the batch through `concat_padded_tensors`;
failed rows must come back as None. Writes what AReaL got as JSON for test_areal_workflow.py.

usage: python areal_side.py OUT.json RECORD_DIR MODEL_DIR
"""

from __future__ import annotations

import asyncio
import json
import sys

from areal.api.cli_args import GenerationHyperparameters
from areal.api.engine_api import InferenceEngine
from areal.api.io_struct import ModelRequest, ModelResponse
from areal.infra.workflow_executor import check_trajectory_format
from areal.utils.data import concat_padded_tensors

from rollgym.engines.base import SamplingParams
from rollgym.engines.scripted import ScriptedEngine
from rollgym.engines.transformers_engine import TransformersEngine
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.integrations.areal import dataset_rows
from rollgym.integrations.areal.workflow import RollgymWorkflow
from rollgym.rollouts.tokenizer_loading import load_chat_tokenizer


class LocalInferenceEngine(InferenceEngine):
    """AReaL's `InferenceEngine` over a rollgym engine, answering `agenerate` as AReaL's remote engines do; its
    weights version moves to `bump_to` after `bump_after` requests (a weights update between turns)."""

    def __init__(self, engine, *, version: int = 0, bump_after: int | None = None, bump_to: int = 0) -> None:
        self.engine, self.version, self.bump_after, self.bump_to = engine, version, bump_after, bump_to
        self.requests: list[ModelRequest] = []

    @property
    def initialized(self) -> bool:  # the one abstract member of InferenceEngine (areal/api/engine_api.py:567-570)
        return True

    def get_version(self) -> int:
        return self.version

    def set_version(self, version: int) -> None:
        self.version = version

    async def agenerate(self, req: ModelRequest) -> ModelResponse:
        self.requests.append(req)
        if self.bump_after is not None and len(self.requests) > self.bump_after:
            self.version = self.bump_to
        g = req.gconfig
        assert g.n_samples == 1, "AReaL's engines refuse n_samples > 1"
        max_new = min(g.max_tokens - len(req.input_ids), g.max_new_tokens)
        assert max_new > 0, "AReaL raises on a non-positive max_new_tokens"
        sampling = SamplingParams(
            temperature=0.0 if g.greedy else g.temperature,
            top_p=g.top_p,
            top_k=g.top_k if 0 < g.top_k < 1_000_000 else 0,
            max_tokens=max_new,
            stop_token_ids=list(g.stop_token_ids),
        )
        out = await self.engine.generate(req.input_ids, sampling)
        return ModelResponse(
            input_tokens=list(req.input_ids),
            output_tokens=out.completion_ids,
            output_logprobs=out.logprobs,
            output_versions=[self.get_version()] * len(out.completion_ids),
            stop_reason=out.finish_reason,
            tokenizer=req.tokenizer,
        )


def scripted(tool_tok, task):
    """`add` (a tool turn), then `submit` with the task's answer (reward 1) or a wrong one (reward 0)."""

    def call(name, **args):
        body = json.dumps({"name": name, "arguments": args})
        return tool_tok.encode(f"<tool_call>\n{body}\n</tool_call>") + [tool_tok.end_of_turn_id]

    def script(prompt, sampling):
        n = script.calls = getattr(script, "calls", 0) + 1
        return call("add", a=1, b=2) if n % 2 else call("submit", answer=task["answer"] + (n // 2 - 1))

    return ScriptedEngine(script, logprob=-0.25)


def as_lists(traj):
    return None if traj is None else {k: v.tolist() for k, v in traj.items()}


async def main(out_path: str, record_dir: str, model_dir: str) -> None:
    tool_tok = load_chat_tokenizer(model_dir)
    gconfig = GenerationHyperparameters(max_new_tokens=24, max_tokens=1024, temperature=1.0)
    workflow = RollgymWorkflow(gconfig, model_dir, max_turns=2, record_dir=record_dir)
    task = CalculatorEnv.default_tasks(1)[0]
    rows = dataset_rows("rollgym/Calculator-v0", [task, task])
    result: dict = {"scripted": [], "bad": [], "real": None, "requests": []}

    # a GRPO group of two scripted episodes, right (reward 1) then wrong (reward 0); weights 4, then 5 from turn 2
    engine = scripted(tool_tok, task)
    areal = LocalInferenceEngine(engine, version=4, bump_after=1, bump_to=5)
    scripted_workflow = RollgymWorkflow(gconfig.new(max_new_tokens=64), model_dir, max_turns=2, record_dir=record_dir)
    trajs = [await scripted_workflow.arun_episode(areal, row) for row in rows]
    for traj in trajs:
        check_trajectory_format(traj)  # AReaL's own check, as its WorkflowExecutor runs it
    batch = concat_padded_tensors(trajs)
    result["scripted"] = [as_lists(t) for t in trajs]
    result["batch"] = {k: list(v.shape) for k, v in batch.items()}
    result["requests"] = [
        {"rid": r.rid, "input_ids": list(r.input_ids), "stop_token_ids": list(r.gconfig.stop_token_ids)}
        for r in areal.requests
    ]

    # rows that fail: an unknown environment, a task the Calculator refuses, a dead engine
    bad_env = {"env_id": "rollgym/NoSuchEnv-v0", "task": json.dumps(task), "messages": []}
    refused = dataset_rows("rollgym/Calculator-v0", [{"task_id": "no-answer", "question": "1 + 1?"}])[0]

    class Dead(LocalInferenceEngine):
        async def agenerate(self, req):
            raise ConnectionError("the rollout server is down")

    result["bad"] = [
        as_lists(await workflow.arun_episode(areal, bad_env)),
        as_lists(await workflow.arun_episode(areal, refused)),
        as_lists(await workflow.arun_episode(Dead(engine), rows[0])),
    ]

    # the real SmolLM2-135M
    model = TransformersEngine(model_dir, model_name="smollm2-135m")
    try:
        traj = await workflow.arun_episode(LocalInferenceEngine(model, version=2), rows[0])
    finally:
        await model.aclose()
    check_trajectory_format(traj)
    result["real"] = as_lists(traj)
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump(result, fh)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
