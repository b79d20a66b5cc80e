"""The bottom layer: defaults, the protocols (seams), processes, tokens, statistics, the rules format and the agent registry. Imports nothing of helpers above it."""
