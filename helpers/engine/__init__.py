"""The run engine (any agent on many tasks) and the one Prompt Learning loop."""
