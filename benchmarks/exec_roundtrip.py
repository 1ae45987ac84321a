"""Exec round trip of `true`: rollgym's persistent runner vs rollgym's plain exec path vs the docker SDK's
`exec_run` vs the `docker exec` CLI. Target: runner <= 5 ms p50. Usage: python benchmarks/exec_roundtrip.py [N]"""

from __future__ import annotations

import subprocess
import sys
import time

from _common import setup, summary

from rollgym.envs.sandbox import DockerSandbox, SandboxConfig


def timed(fn, n: int) -> list[float]:
    fn()  # warm-up
    out = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def main(n: int = 200) -> None:
    image = setup()
    with DockerSandbox(SandboxConfig(image=image, task_id="bench-exec")) as sb:
        assert sb.uses_runner, sb.runner_error
        print(summary("rollgym runner (exec)", timed(lambda: sb.exec("true"), n)))
        print(
            summary("rollgym plain path (_exec_plain)", timed(lambda: sb._exec_plain("true", 30, "/", None, 10_000), n))
        )
        print(summary("docker SDK exec_run", timed(lambda: sb.container.exec_run(["true"]), n)))
        print(
            summary(
                "docker exec CLI",
                timed(lambda: subprocess.run(["docker", "exec", sb.name, "true"], check=True), n // 2),
            )
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
