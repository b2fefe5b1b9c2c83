"""The benchmarked tools (echo and joke) written with TrustGraph's own
DynamicToolService (trustgraph-base), same logic as the Rust variants.

    python py_service.py --kind echo --id bench-echo-service -t bench-echo \
        -p pulsar://127.0.0.1:6650 --concurrency 1 --no-metrics --no-loki-enabled
"""

import sys

from trustgraph.base.dynamic_tool_service import DynamicToolService

JOKES = {
    ("pun", "programming"): "I'd tell you a UDP joke, but you might not get it.",
    ("dad-joke", "programming"): "Why do programmers prefer dark mode? Because light attracts bugs.",
    ("one-liner", "programming"): "There are 10 kinds of people: those who read binary and those who don't.",
    ("pun", "animals"): "A cheetah never plays hide and seek: it's always spotted.",
    ("pun", "food"): "I'm on a seafood diet: I see food and I eat it.",
}


def joke(topic, style):
    topic = topic.lower()
    for (joke_style, category), text in JOKES.items():
        if joke_style == style and category in topic:
            return f"Here's a {style} for you:\n\n{text}"
    return f"Here's a {style} for you:\n\nTime flies like an arrow; fruit flies like a banana."


KIND = "echo"
if "--kind" in sys.argv:
    index = sys.argv.index("--kind")
    KIND = sys.argv[index + 1]
    del sys.argv[index:index + 2]


class Processor(DynamicToolService):
    async def invoke(self, config, arguments):
        if KIND == "echo":
            return arguments["text"]
        topic = arguments.get("topic", "")
        if not topic:
            raise ValueError("give a topic")
        return joke(topic, config.get("style", "pun"))


if __name__ == "__main__":
    Processor.launch("bench-service", __doc__)
