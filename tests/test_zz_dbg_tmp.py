import asyncio, json
from openai_server import FakeOpenAIServer, Reply, text_reply
async def test_dbg(make_bot):
    async with FakeOpenAIServer() as model:
        slow = text_reply("too late")
        model.script(Reply(events=slow.events, hang_s=10.0))
        bot = await make_bot(AI_URL=model.base_url, AI_API_KEY="sk-x", AI_MODEL="fake-model", AI_TIMEOUT_S="2")
        await bot.slash("/sz-ask", "how does the deploy webhook verify signatures?")
        for _ in range(100):
            await asyncio.sleep(0.1)
            if bot.context.metrics()["asks"]["total"]: break
        for c in bot.fake.calls: print(c.summary())
        print(model.requests and len(model.requests))
