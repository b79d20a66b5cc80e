"""Model access: the LLM client, the model gateway and the scripted model server."""
