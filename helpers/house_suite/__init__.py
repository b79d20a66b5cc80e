"""The bundled house-conventions task suite (source repositories and tasks)."""
