"""Evidence and plots from saved results."""
