"""BFCL's backends are in-memory simulations: running the ground truth of every entry of every backend, through the
environment's tools, opens no file for writing, starts no process and opens no connection on the host (watched with
Python's audit hooks)."""

from __future__ import annotations

import json
import sys

from support.bfcl import BACKENDS, tool_call

import rollgym as rg
from rollgym.envs.suites.bfcl import CATEGORIES
from rollgym.envs.suites.bfcl.entries import category_entries

#: audit events that change the host or reach outside the process
_HOST_EVENTS = {
    "os.mkdir", "os.remove", "os.rename", "os.rmdir", "os.truncate", "os.chmod", "os.link", "os.symlink",
    "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "subprocess.Popen", "socket.connect",
    "socket.bind", "shutil.copyfile", "shutil.rmtree", "shutil.move",
}  # fmt: skip
_WATCH = {"on": False, "seen": []}


def _hook(event: str, args: tuple) -> None:
    if not _WATCH["on"]:
        return
    if event in _HOST_EVENTS:
        _WATCH["seen"].append((event, args))
    elif event == "open" and len(args) > 1 and isinstance(args[1], str) and set(args[1]) & set("wax+"):
        _WATCH["seen"].append((event, args))


sys.addaudithook(_hook)


def _run_ground_truth(env, entry) -> int:
    env.reset(options={"task": {"task_id": entry.id}})
    count = 0
    for turn in entry.ground_truth:
        if turn:
            calls = [tool_call(entry, c) for c in turn]
            tool_calls = [
                {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                for i, (n, a) in enumerate(calls)
            ]
            env.step({"role": "assistant", "content": None, "tool_calls": tool_calls})
            count += len(calls)
        _, reward, terminated, _, _ = env.step({"role": "assistant", "content": "Done."})
    assert terminated and reward == 1.0, entry.id
    return count


def test_every_backend_runs_in_memory_without_touching_the_host():
    """Every 16th entry of the 800 (each category's 8 backends among them), through the environment's tools."""
    envs = {c: rg.make(f"bfcl/{c}-v0") for c in CATEGORIES}
    entries = [e for c in CATEGORIES for e in category_entries(c).values()]
    _run_ground_truth(envs[entries[0].category], entries[0])  # BFCL's modules imported (and compiled) first
    _WATCH["on"] = True
    try:
        calls = sum(_run_ground_truth(envs[e.category], e) for e in entries[1::16])  # 50 entries
    finally:
        _WATCH["on"] = False
    assert {c for e in entries[1::16] for c in e.involved_classes} == set(BACKENDS)
    assert calls > 120 and _WATCH["seen"] == []
    for env in envs.values():
        env.close()


def test_the_file_system_backend_keeps_its_tree_in_objects():
    from bfcl_eval.eval_checker.multi_turn_eval.func_source_code import gorilla_file_system as gfs

    fs = gfs.GorillaFileSystem()
    fs._load_scenario({"root": {"alex": {"type": "directory", "contents": {}}}})
    fs.mkdir(dir_name="reports")
    fs.touch(file_name="notes.txt")
    fs.echo(content="hello", file_name="notes.txt")
    assert isinstance(fs.root, gfs.Directory) and isinstance(fs.root.contents["notes.txt"], gfs.File)
    assert (
        fs.cat(file_name="notes.txt") == {"file_content": "hello"} and "reports" in fs.ls()["current_directory_content"]
    )
