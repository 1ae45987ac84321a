"""An episode's reward: BFCL's own `multi_turn_checker` on the calls the model made, turn by turn, against the
entry's ground truth, after the checks BFCL's eval runner makes first (`_evaluate_single_multi_turn_entry`)."""

from __future__ import annotations

from typing import Any

from rollgym.envs.core.errors import ScorerError
from rollgym.envs.suites.bfcl.calls import forget_instances, fresh_model_name
from rollgym.envs.suites.bfcl.entries import BFCLEntry


def bfcl_verdict(entry: BFCLEntry, turns: list[list[list[str]]]) -> dict[str, Any]:
    """BFCL's verdict (`{"valid": bool, ...}`) on `turns` (per user turn, per step, BFCL's call strings): an episode
    that did not reach every turn is force-terminated (invalid), as in BFCL's eval runner; empty steps are dropped,
    as its decoding drops them; then `multi_turn_checker` runs every call again on fresh backends and compares their
    state and results with the ground truth's after each turn. Raises `ScorerError` when BFCL's checker raises."""
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import is_empty_execute_response

    if len(turns) != len(entry.ground_truth):
        return {
            "valid": False,
            "error_type": "multi_turn:force_terminated",
            "error_message": f"the episode ended after {len(turns)} of {len(entry.ground_truth)} user turns",
        }
    decoded = [[step for step in turn if not is_empty_execute_response(step)] for turn in turns]
    model_name = fresh_model_name()
    try:
        return multi_turn_checker(decoded, entry.ground_truth, entry.checker_entry(), entry.category, model_name)
    except Exception as exc:  # the suite's checker failing is this rollout's error, not the batch's
        raise ScorerError(f"BFCL's multi_turn_checker ({entry.id}) raised {type(exc).__name__}: {exc}") from exc
    finally:
        forget_instances(model_name)


def bfcl_reward(entry: BFCLEntry, turns: list[list[list[str]]]) -> tuple[float, dict[str, Any]]:
    """1.0 when BFCL's checker finds the entry solved, else 0.0; with the verdict."""
    verdict = bfcl_verdict(entry, turns)
    return (1.0 if verdict.get("valid") else 0.0), verdict
