"""asyncio shell around the protocol core: broker and controller processes on the Kafka wire protocol."""
