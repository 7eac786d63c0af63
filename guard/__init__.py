"""The tool check: catalogue, tool kinds, signed history, ordered checks, confirmation tokens."""
