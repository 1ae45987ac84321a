"""(e) An agent that only speaks the OpenAI API (here the openai client itself), recorded token-exact."""

import asyncio

import openai

import rollgym as rg


async def main() -> None:
    async with rg.RecordingProxy("smollm2-135m") as proxy:
        session = proxy.session(task_id="hello")  # give the agent session.base_url as its OpenAI base URL
        client = openai.AsyncOpenAI(base_url=session.base_url, api_key="unused")
        hello = [{"role": "user", "content": "Say hi."}]
        await client.chat.completions.create(model="rollgym", messages=hello, max_tokens=16)
    [rollout] = session.rollouts()  # one token-exact Rollout per segment of the conversation
    print(rollout.messages()[-1]["content"], rollout.token_view()["completion_ids"])


asyncio.run(main())
