"""A real 2-node Ray cluster (`ray.cluster_utils.Cluster`) for the distributed tests, started once per session."""

from __future__ import annotations

import pytest

ray = pytest.importorskip("ray", reason="the distributed tests need Ray: pip install 'rollgym[ray]'")

from ray.cluster_utils import Cluster  # noqa: E402

#: Faster detection of a dead node than Ray's default (15 s), so the fault tests stay short.
SYSTEM_CONFIG = {"health_check_period_ms": 500, "health_check_failure_threshold": 4, "health_check_timeout_ms": 500}


@pytest.fixture(scope="session")
def cluster():
    """Head and a worker node, 2 CPUs each; each offers one `spread` (one actor per node; the head also one `pair`, for a node a test kills), the driver connected."""
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "resources": {"spread": 1, "pair": 1},
                                                      "_system_config": SYSTEM_CONFIG})
    c.add_node(num_cpus=2, resources={"spread": 1})
    c.wait_for_nodes()
    ray.init(address=c.address, log_to_driver=False)
    yield c
    from rollgym.rollouts.distributed.pool import drop_pool

    drop_pool()
    ray.shutdown()
    c.shutdown()
