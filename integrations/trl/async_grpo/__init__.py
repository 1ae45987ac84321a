"""Asynchronous RL with TRL's `AsyncGRPOTrainer`: rollgym as its rollout worker, and weight sync to a vLLM server."""
