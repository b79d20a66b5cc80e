"""The scripted dry run: every model role played by the scripted server."""
