"""Routes of the router's pages: Try a turn (`POST /v1/plan` is routed in console/urls.py)."""

from __future__ import annotations

from django.urls import path

from router import views

urlpatterns = [path("", views.try_a_turn, name="try-a-turn")]
