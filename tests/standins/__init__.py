"""Stand-in servers that speak real protocols on loopback, for tests and benchmarks without a GPU.

`vllm_standin` answers vLLM's `/v1/completions` and `/v1/models` field for field; `openai_standin`
answers OpenAI's `/v1/chat/completions`; `loopback` runs either in a background thread.
"""
