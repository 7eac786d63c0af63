"""The router: reads every turn, before any model sees it, into a plan (English and pt-BR)."""
