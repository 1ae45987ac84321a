"""verifiers (0.4, v1) and prime-rl, which trains on verifiers' traces, in one room: the offline converter.

- `episode_record`, `trace_record`: a rollgym rollout as the record of a verifiers `Episode` / `Trace` (message graph
  with token ids, mask and compact logprobs; rewards; errors; the policy span), in plain Python;
- `branch_view`: what each verifiers branch of a rollout must read (`Branch.token_ids`, `sampled_mask`, `logprobs`);
- `episode.verifiers_episode`: the same as verifiers' own `WireEpisode` (imports verifiers, so only its venv loads it);
- `export_verifiers`: `rollgym export RUN --format verifiers`.
"""

from rollgym.integrations.verifiers.export import export_verifiers
from rollgym.integrations.verifiers.trace_record import REWARD_KEY, branch_view, episode_record, trace_record

__all__ = ["REWARD_KEY", "branch_view", "episode_record", "export_verifiers", "trace_record"]
