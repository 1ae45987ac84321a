"""Adapters from the rollout core to the systems users train and scale with, one room each: TRL (`trl/`), Ray
(`ray/`), Parquet export (`export.py`). The core never imports them."""
