"""The rollout core: the multi-turn loop (`loop`), its records (`records`), jobs and executors (`jobs`), batches
(`batch`), the model (`policy`), output files and summaries (`output`), and batch generation (`generate`).

Depends on `tokenization`, `envs` and `engines`, never on an integration, the proxy, the viewer or the CLI.
"""
