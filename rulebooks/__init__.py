"""Rulebooks: Colang 1.0 / 2.x and rule sheets compiled into the record the tool check enforces."""
