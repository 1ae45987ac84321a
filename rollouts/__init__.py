"""Everything that produces rollouts, in one-way layers (docs/concepts.md#layers):

- `core`: the rollout loop, its records, batches, the policy, output files and `generate`;
- `integrations`: TRL's trainers, Ray clusters, Parquet export;
- `proxy`: the recording proxy that turns a black-box agent's API calls into rollouts;
- `view`: the trajectory viewer;
- `cli`: the `rollgym` command line.

The public names are in `rollgym` itself (`import rollgym as rg`).
"""
