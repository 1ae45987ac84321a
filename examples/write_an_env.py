"""(d) Writing an environment: typed tools, a reward, its own tasks, registered and checked like any gymnasium env."""

import rollgym as rg


class Shout(rg.Env):
    @classmethod
    def default_tasks(cls, n, seed=0):  # a reset that names no task takes default_tasks(1, seed)
        return [{"task_id": f"shout-{seed}-{i}", "word": ["hello", "token", "exact"][(seed + i) % 3]} for i in range(n)]

    async def setup(self, task):
        self.word, self.said = task["word"], None
        return [{"role": "user", "content": f"Call shout with the word {self.word!r}."}], {"task_id": task["task_id"]}

    @rg.tool
    def shout(self, word: str) -> str:
        """Shout a word back in capitals; this ends the episode."""
        self.said = word
        self.finish()
        return word.upper()

    async def compute_reward(self):
        return float(self.said == self.word), {"shouted": float(self.said is not None)}


rg.register("example/Shout-v0", Shout)
rg.check_env(rg.make("example/Shout-v0"))
print("example/Shout-v0 passes check_env")
