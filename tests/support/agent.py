"""Agents the tests define (as users add one): a Python script run inside the sandbox by the Python rollgym mounts,
speaking to its proxy session with the standard library only."""

from __future__ import annotations

import sys
from pathlib import Path

from rollgym.agents import AgentRun, AgentSpec

#: the Python install rollgym runs on, mounted into every agent's sandbox (no venv, no packages)
PYTHON = str(Path(sys.base_prefix).resolve() / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}")

ASK = """
import json, os, urllib.request

def ask(text, max_tokens=8, url=None):
    body = {"model": "rollgym", "messages": [{"role": "user", "content": text}], "max_tokens": max_tokens}
    req = urllib.request.Request((url or os.environ["BASE_URL"]) + "/chat/completions", data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json", "authorization": "Bearer " + os.environ["API_KEY"]})
    return json.load(urllib.request.urlopen(req, timeout=300))["choices"][0]["message"]["content"]
"""


class ScriptAgent(AgentSpec):
    """An agent that is a Python script (`script`, with `ask(text)` defined before it), given the prompt as argv[1]."""

    name, env_var, install, cache_path = "script", "ROLLGYM_TEST_SCRIPT", "nothing to install", "-"

    def __init__(self, script: str, *, extra_files: dict[str, str] | None = None, **kwargs) -> None:
        super().__init__(executable=PYTHON, **kwargs)
        self.script, self.extra_files = script, extra_files or {}

    def host_paths(self) -> list[str]:
        return []  # its runtime is the Python every sandboxed agent gets

    def files(self, run: AgentRun) -> dict[str, str]:
        gold = run.task.patch if run.task is not None else ""
        extra = {f"{run.home}/{name}": text for name, text in self.extra_files.items()}
        return {f"{run.home}/agent.py": ASK + self.script, f"{run.home}/gold.diff": gold, **extra}

    def environment(self, run: AgentRun) -> dict[str, str]:
        return {"BASE_URL": run.base_url, "API_KEY": run.api_key}

    def command(self, run: AgentRun, prompt: str) -> list[str]:
        return [PYTHON, "-I", f"{run.home}/agent.py", prompt]


#: asks the model once (a rollout to record), then applies the task's gold patch (a resolved task)
SOLVER = """
import subprocess, sys
print("model said:", ask(sys.argv[1][:300]))
subprocess.run(["git", "apply", os.environ["HOME"] + "/gold.diff"], check=True)
"""

#: tries every way out of its sandbox and prints what happened, one JSON object per attempt
HOSTILE = r"""
import errno, json, socket, subprocess, sys, urllib.error, urllib.request

def attempt(name, fn):
    try:
        print(json.dumps({"name": name, "ok": True, "got": str(fn())[:200]}))
    except Exception as exc:
        print(json.dumps({"name": name, "ok": False, "error": type(exc).__name__ + ": " + str(exc)[:200]}))
    sys.stdout.flush()

def write(path):
    with open(path, "w") as f:
        f.write("hostile")
    return path

def read(path):
    with open(path) as f:
        return f.read()

def connect(host, port):
    s = socket.create_connection((host, int(port)), timeout=3)
    s.close()
    return "connected"

def fetch(url, data=None):
    req = urllib.request.Request(url, data=data, headers={"content-type": "application/json", "authorization": "Bearer " + os.environ["API_KEY"]})
    try:
        return urllib.request.urlopen(req, timeout=60).status
    except urllib.error.HTTPError as exc:
        raise RuntimeError("HTTP %d" % exc.code)

def unix(path):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    return "connected"

def fork_bomb(n):
    procs = []
    try:
        for _ in range(n):
            procs.append(subprocess.Popen(["sleep", "30"]))
    finally:
        for p in procs:
            p.kill()
            p.wait()
    return len(procs)

root = os.environ["BASE_URL"].split("/sessions/")[0]
mine = os.environ["BASE_URL"]
attempt("model", lambda: ask("hello", 4))
for path in os.environ["HOST_WRITE_PATHS"].split(":"):
    attempt("write " + path, lambda: write(path))
attempt("read host secret", lambda: read(os.environ["HOST_SECRET"]))
attempt("write runtime", lambda: write(os.environ["RUNTIME_DIR"] + "/hostile.txt"))
for hostport in os.environ["HOST_PORTS"].split(","):
    attempt("connect " + hostport, lambda: connect(*hostport.rsplit(":", 1)))
attempt("docker socket", lambda: unix("/var/run/docker.sock"))
attempt("list sessions", lambda: fetch(root + "/sessions"))
attempt("other session", lambda: fetch(root + "/sessions/not-mine/v1/chat/completions", b"{}"))
attempt("escape by dots", lambda: fetch(mine + "/../../not-mine/v1/models"))
attempt("own session", lambda: ask("hi", 2))
attempt("fork bomb", lambda: fork_bomb(int(os.environ["FORKS"])))
"""
