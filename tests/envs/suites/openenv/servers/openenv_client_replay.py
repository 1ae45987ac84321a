"""Replays a recorded episode with OpenEnv's own client (`GenericEnvClient`, openenv 0.10.0), in openenv's venv:
argv[1] the server's URL; stdin a JSON object {"reset": {...}, "actions": [...]}; stdout one JSON line per step,
{"observation", "reward", "done"}, the reset's first."""

import json
import sys

from openenv.core.generic_client import GenericEnvClient

episode = json.load(sys.stdin)
with GenericEnvClient(base_url=sys.argv[1]).sync() as client:
    results = [client.reset(**episode["reset"])]
    results += [client.step(action) for action in episode["actions"]]
for result in results:
    print(json.dumps({"observation": result.observation, "reward": result.reward, "done": result.done}))
