"""The agents rollgym ships: Claude Code, Codex, opencode, mini-swe-agent, Aider."""
