"""The console's decision endpoints over HTTP, under gunicorn, beside an authenticated no-op."""
