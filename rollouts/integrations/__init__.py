"""Adapters from the rollout core to the systems users train and scale with: TRL (`trl`, `trl_vllm_cpu`),
Ray (`ray`) and Parquet (`export`). The core never imports them."""
