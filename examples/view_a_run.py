"""(f) Look at a run: one HTML page (offline, self-contained) with the token strip of every rollout."""

import rollgym as rg

limits = rg.Limits(max_turns=3, max_tokens_per_turn=64)
rg.generate("rollgym/Calculator-v0", "smollm2-135m", out="runs/calc", num_tasks=2, n=2, resume=True, limits=limits)
path = rg.write_viewer("runs/calc")  # the same as `rollgym view runs/calc`; add --serve to serve it
print("open", path, "in a browser")
