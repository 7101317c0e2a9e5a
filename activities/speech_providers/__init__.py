"""Speech recognizers and synthesizers: Azure Speech, OpenAI-compatible audio, offline."""
