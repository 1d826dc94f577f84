"""The live daemon (`schedd serve`): an asyncio shell around the engine."""
