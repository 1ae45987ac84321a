"""SkyRL, in one room (SkyRL 0.4): the live hook and the offline converter.

- `generator.RollgymGenerator`: SkyRL's generator (`GeneratorInterface`) running rollgym environments through
  SkyRL's own inference client (it imports SkyRL, so only SkyRL loads it);
- `SkyRLClientEngine`: SkyRL's `inference_engine_client` as a rollgym engine;
- `generator_output`: rollgym samples as `GeneratorOutput` (`rollgym export --format skyrl`);
- `dataset_rows`: rollgym tasks as rows of SkyRL's `PromptDataset`.
"""

from rollgym.integrations.skyrl.dataset import dataset_rows
from rollgym.integrations.skyrl.engine import SkyRLClientEngine
from rollgym.integrations.skyrl.generator_output import generator_output

__all__ = ["SkyRLClientEngine", "dataset_rows", "generator_output"]
