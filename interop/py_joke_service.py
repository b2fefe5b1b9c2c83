"""The joke service of TrustGraph's tool-services spec, written with
TrustGraph's own DynamicToolService (trustgraph-base). The Rust client is
tested against it, and the benchmarks measure it.

    python py_joke_service.py --id py-joke-service -t py-joke -p pulsar://127.0.0.1:6650 --no-metrics
"""

from trustgraph.base.dynamic_tool_service import DynamicToolService

JOKES = {
    ("programming", "pun"): "I'd tell you a UDP joke, but you might not get it.",
    ("programming", "dad-joke"): "Why do programmers prefer dark mode? Because light attracts bugs.",
    ("programming", "one-liner"): "There are 10 kinds of people: those who read binary and those who don't.",
    ("animals", "pun"): "A cheetah never plays hide and seek: it's always spotted.",
    ("food", "pun"): "I'm on a seafood diet: I see food and I eat it.",
}


def pick_joke(topic, style):
    for (category, joke_style), joke in JOKES.items():
        if category in topic.lower() and joke_style == style:
            return joke
    return "Time flies like an arrow; fruit flies like a banana."


class Processor(DynamicToolService):
    async def invoke(self, config, arguments):
        style = config.get("style", "pun")
        topic = arguments.get("topic", "")
        if not topic.strip():
            raise ValueError("give a topic for the joke, e.g. programming, animals or food")
        if arguments.get("structured"):
            return {"style": style, "topic": topic, "joke": pick_joke(topic, style)}
        return f"Here's a {style} for you:\n\n{pick_joke(topic, style)}"


if __name__ == "__main__":
    Processor.launch("py-joke-service", __doc__)
