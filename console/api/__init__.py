"""The console's REST API under /v1/: authentication, errors, serializers and views."""
