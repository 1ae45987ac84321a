"""How `rollgym view` scales: file size, write time, and the page's load, open and search times in a real
headless Chromium, for runs of 100 to 10,000 rollouts of a realistic agent shape.

Rollouts are synthetic but shaped like a SWE run (groups of 8 samples sharing an 800-id prompt, 4 turns of
120 sampled ids and a 150-id environment reply, one tool call per turn, about 4 characters of message text
per id); token texts come from the real SmolLM2 tokenizer. Times are wall-clock on this machine, which
drifts by up to 2x: compare the sizes with each other in one run, not with another day's figures.

    .venv/bin/python benchmarks/bench_viewer.py [--sizes 100,1000,10000] [--single]

Runs over 2,000 rollouts are split (index in the page, data in chunk files) unless `--single` forces one
file, to show what splitting saves.
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from pathlib import Path

from rollgym.rollouts.records import Rollout, RolloutTimings, ToolCall, Turn
from rollgym.view import write_viewer

WORDS = "the of repository function test value error return file line fix issue call result python module".split()


def text(rng: random.Random, n_ids: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_ids))


def synthetic_run(n: int, path: Path, seed: int = 0) -> None:
    """`n` rollouts in groups of 8, written as a rollouts.jsonl."""
    rng = random.Random(seed)
    with open(path, "w") as fh:
        for i in range(n):
            task = f"task-{i // 8}"
            prompt_rng = random.Random(i // 8)
            prompt = [prompt_rng.randrange(49152) for _ in range(800)]
            turns = []
            for k in range(4):
                call = ToolCall(
                    id=f"c{k}",
                    name="bash",
                    arguments={"command": text(rng, 12)},
                    result=text(rng, 150),
                    failed=rng.random() < 0.1,
                    duration_s=rng.random(),
                )
                turns.append(
                    Turn(
                        index=k,
                        prompt_len=800 + k * 270,
                        completion_ids=[rng.randrange(49152) for _ in range(120)],
                        logprobs=[-rng.expovariate(3) for _ in range(120)],
                        generate_s=rng.random() * 3,
                        message={
                            "role": "assistant",
                            "content": text(rng, 90),
                            "tool_calls": [
                                {
                                    "id": f"c{k}",
                                    "type": "function",
                                    "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                                }
                            ],
                        },
                        tool_calls=[call],
                        env_messages=[{"role": "tool", "tool_call_id": f"c{k}", "content": call.result}],
                        bridge_ids=[rng.randrange(49152) for _ in range(150)],
                        env_s=rng.random(),
                    )
                )
            r = Rollout(
                env_id="rollgym/SWE-v0",
                task_id=task,
                group_id=task,
                sample_index=i % 8,
                prompt_ids=prompt,
                initial_messages=[
                    {"role": "system", "content": text(rng, 100)},
                    {"role": "user", "content": text(rng, 600)},
                ],
                turns=turns,
                reward=float(rng.random() < 0.3),
                stop_reason="env_terminated",
                model="smollm2-135m",
                engine="bench",
                timings=RolloutTimings(wall_s=20 * rng.random()),
            )
            fh.write(r.to_json() + "\n")


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
    ):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)


def wait_for(driver, script: str, timeout: float = 300.0) -> None:
    """Poll until `script` returns true (a split page loads its chunks asynchronously)."""
    deadline = time.monotonic() + timeout
    while not driver.execute_script(script):
        if time.monotonic() > deadline:
            raise TimeoutError(script)
        time.sleep(0.005)


def measure(driver, page: Path, n: int) -> dict[str, float]:
    driver.get("about:blank")
    t = time.perf_counter()
    driver.get(f"file://{page}#/")  # returns after the load event: parsed, index read, list rendered
    load = time.perf_counter() - t
    listed = driver.execute_script("return document.querySelectorAll('tr.rollout').length")
    t = time.perf_counter()
    driver.execute_script(f"location.hash = '#/r/{n - 1}'")
    wait_for(driver, "return document.querySelectorAll('.strip .tk').length > 0")
    open_s = time.perf_counter() - t
    driver.execute_script("location.hash = '#/'")
    wait_for(driver, "return !!document.getElementById('f-q')")
    t = time.perf_counter()
    driver.execute_script(
        "const q = document.getElementById('f-q'); q.value = 'repository'; state.q = q.value; renderList();"
    )
    wait_for(driver, "const c = document.getElementById('count'); return c && !c.textContent.startsWith('searching')")
    search = time.perf_counter() - t
    return {"load_s": load, "listed": listed, "open_s": open_s, "search_s": search}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--single", action="store_true", help="one file at every size (no chunk files)")
    args = parser.parse_args()
    driver = browser()
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for n in [int(x) for x in args.sizes.split(",")]:
                src = Path(tmp) / f"run{n}.jsonl"
                synthetic_run(n, src)
                t = time.perf_counter()
                page = write_viewer(
                    src,
                    Path(tmp) / f"view{n}.html",
                    tokenizer="smollm2-135m",
                    log=lambda _m: None,
                    split=False if args.single else None,
                )
                write = time.perf_counter() - t
                m = measure(driver, page, n)
                files = page.with_name(page.stem + "_files")
                data = sum(f.stat().st_size for f in files.iterdir()) / 1e6 if files.exists() else 0.0
                rows.append((n, src.stat().st_size / 1e6, page.stat().st_size / 1e6, write, m))
                print(
                    f"{n:>6} rollouts: jsonl {rows[-1][1]:7.1f} MB  page {rows[-1][2]:7.1f} MB  chunks {data:7.1f} MB  "
                    f"write {write:6.1f} s  "
                    f"load {m['load_s']:5.2f} s  open one {m['open_s'] * 1000:6.0f} ms  search {m['search_s'] * 1000:6.0f} ms  "
                    f"rows shown {m['listed']}",
                    flush=True,
                )
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
