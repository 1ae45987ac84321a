"""A real 2-node Ray cluster (`ray.cluster_utils.Cluster`) for the distributed tests, started once per session."""

from __future__ import annotations

import contextlib
import os
import socket

import pytest
import ray
from ray.cluster_utils import Cluster

#: Faster detection of a dead node than Ray's default (15 s), so the fault tests stay short.
SYSTEM_CONFIG = {"health_check_period_ms": 500, "health_check_failure_threshold": 4, "health_check_timeout_ms": 500}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def fork_support_off():
    """GRPC_ENABLE_FORK_SUPPORT=false for the head's processes, as docs/scale.md says for `ray start --head`: Ray's
    client server forks a server per client from a process full of gRPC threads, and with grpcio's fork handlers
    on, that child segfaults now and then (1 connection in 4 here, Ray 2.60 / grpcio 1.85)."""
    saved = os.environ.get("GRPC_ENABLE_FORK_SUPPORT")
    os.environ["GRPC_ENABLE_FORK_SUPPORT"] = "false"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("GRPC_ENABLE_FORK_SUPPORT")
        else:
            os.environ["GRPC_ENABLE_FORK_SUPPORT"] = saved


@pytest.fixture(scope="session")
def cluster():
    """Head and a worker node, 2 CPUs each; each offers one `spread` (one actor per node; the head also one `pair`,
    for a node a test kills), the driver connected. The head runs a Ray Client server at `cluster.client_address`."""
    port = free_port()
    with fork_support_off():
        c = Cluster(
            initialize_head=True,
            head_node_args={
                "num_cpus": 2,
                "resources": {"spread": 1, "pair": 1},
                "ray_client_server_port": port,
                "node_ip_address": "127.0.0.1",  # every server of the cluster on loopback (issue 26, item 6)
                "_system_config": SYSTEM_CONFIG,
            },
        )
    c.client_address = f"ray://127.0.0.1:{port}"
    c.add_node(num_cpus=2, resources={"spread": 1}, node_ip_address="127.0.0.1")
    c.wait_for_nodes()
    ray.init(address=c.address, log_to_driver=False)
    yield c
    from rollgym.integrations.ray.pool import drop_pool

    drop_pool()
    ray.shutdown()
    c.shutdown()
