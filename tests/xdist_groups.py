"""Which tests share a machine-wide resource, and so run one after another on one xdist worker: the real vLLM
server (`vllm`), and the Ray cluster, the second dockerd, the test sshd and the test registry, which some of these
tests kill (`hosts`); and each trainer's own-code tests, whose module fixture runs the trainer once in its venv (on
two workers it would run twice).

xdist's own `--dist loadgroup` reads `xdist_group` marks into node ids, which pytest 9 no longer lets a plugin
change (its nodes keep a structured id); so the controller's scheduler finds the group from the node id here."""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling

#: group -> node-id prefixes (a file, a folder, or one test)
GROUPS: dict[str, tuple[str, ...]] = {
    "vllm": (
        "tests/engines/test_engines_vllm_real.py",
        "tests/engines/test_engines_vllm_local.py",
        "tests/rollouts/test_generate_real_vllm.py",
        "tests/integrations/trl/test_trl_vllm_cpu.py::test_grpo_colocate_on_cpu_syncs_weights_into_vllm",
        "tests/proxy/test_proxy_cli.py::test_proxy_command_over_the_real_vllm",
        "tests/integrations/trl/async_grpo/test_async_weight_sync_real.py",
        "tests/integrations/trl/async_grpo/test_async_trainer_real.py",
    ),
    "hosts": (
        "tests/integrations/ray/",
        "tests/envs/sandbox/test_sandbox_ssh.py",
        "tests/envs/sandbox/test_sandbox_hosts.py",
        "tests/envs/swe/test_swe_hosts.py",
        "tests/envs/swe/test_swe_registry.py",
        "tests/envs/sandbox/test_sandbox_prepared.py",
        "tests/agents/test_agents_hosts.py",
    ),
    "verl": ("tests/integrations/verl/test_verl_own_code.py",),
    "skyrl": ("tests/integrations/skyrl/test_skyrl_own_code.py",),
    "openrlhf": ("tests/integrations/openrlhf/test_openrlhf_own_code.py",),
    "verifiers": ("tests/integrations/verifiers/",),
    "art": ("tests/integrations/art/",),
}
#: the fixtures that hold each group's resource: a test using one must be in its group (checked at collection)
FIXTURES = {"real_vllm": "vllm", "vllm_venv": "vllm", "cluster": "hosts", "docker2": "hosts"}


def group_of(nodeid: str) -> str | None:
    for group, prefixes in GROUPS.items():
        if any(
            nodeid == p or nodeid.startswith(p if p.endswith("/") else p + ("[" if "::" in p else "::"))
            for p in prefixes
        ):
            return group
    return None


class SharedResourceScheduling(LoadScopeScheduling):
    """Each test is its own unit of work but for the groups above, each one unit, run by one worker; units with the
    most tests go first (xdist's `loadscopereorder`), so the two long groups start at once, one per worker."""

    def _split_scope(self, nodeid: str) -> str:
        return group_of(nodeid) or nodeid
