"""Worker processes, one entry point serving any mix of the calls/llm/speech/tools queues."""
