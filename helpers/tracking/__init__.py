"""Phoenix: its server and the experiments, datasets and prompt versions logged to it."""
