"""(d) Writing an environment: typed tools, a reward, registered and checked like any gymnasium env."""
import rollgym as rg


class Shout(rg.Env):
    async def setup(self, task):
        self.word, self.said = (task or {}).get("word", "hello"), None
        return [{"role": "user", "content": f"Call shout with the word {self.word!r}."}], {"task_id": self.word}

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
