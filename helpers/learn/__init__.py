"""The judge and the optimizer: feedback in English, and the edits it becomes."""
