"""Settings of the console: `base` is shared, `dev` runs `make run`, `test` runs the suite, `production` serves."""
