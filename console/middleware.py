"""Every page needs a signed-in person; the API answers 401/403 itself, with keys or sessions."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpResponse, JsonResponse
from django.urls import reverse

OPEN_PREFIXES = ("/v1/", "/static/")
# Prometheus scrapes `/metrics` with an API key; the view authenticates it like the API does.
OPEN_PATHS = ("/metrics",)


class LoginRequiredMiddleware:
    def __init__(self, get_response) -> None:  # noqa: ANN001
        self.get_response = get_response

    def __call__(self, request):  # noqa: ANN001, ANN204
        path = request.path_info
        login = reverse(settings.LOGIN_URL)
        if (
            not request.user.is_authenticated
            and path != login
            and not path.startswith(OPEN_PREFIXES)
            and path not in OPEN_PATHS
        ):
            if getattr(request, "htmx", False):
                # htmx would swap the login page into a fragment; send the browser there instead.
                response = HttpResponse(status=401)
                response["HX-Redirect"] = login
                return response
            return redirect_to_login(request.get_full_path(), login)
        return self.get_response(request)


class ApiQueryMiddleware:
    """The API's edge for what is not a body: a query parameter with a NUL or a lone surrogate is
    a 400 naming it (PostgreSQL cannot compare text holding a NUL: that was a 500)."""

    def __init__(self, get_response) -> None:  # noqa: ANN001
        self.get_response = get_response

    def __call__(self, request):  # noqa: ANN001, ANN204
        if request.path_info.startswith("/v1/"):
            from console.api.parsers import form_problem

            problem = form_problem(request.GET)
            if problem is not None:
                field, message = problem
                return JsonResponse({field: [message]}, status=400)
        return self.get_response(request)


class OrganisationLanguageMiddleware:
    """A page is answered in its organisation's language where it says a form's errors: Django's
    own form messages come from Django's catalogue (pt-BR), the console's from
    `console.errors_i18n`. The API keeps English: its errors are read by programs."""

    LANGUAGES = {"pt-BR": "pt-br"}

    def __init__(self, get_response) -> None:  # noqa: ANN001
        self.get_response = get_response

    def __call__(self, request):  # noqa: ANN001, ANN204
        chosen = self._language(request)
        if chosen is None:
            return self.get_response(request)
        from django.utils import translation

        with translation.override(chosen):
            return self.get_response(request)

    def _language(self, request) -> str | None:  # noqa: ANN001
        if request.path_info.startswith(OPEN_PREFIXES) or not request.user.is_authenticated:
            return None
        from django.http import Http404

        from console.access import actor_for_request
        from console.models import OrganisationSettings

        try:
            actor = actor_for_request(request)
        except Http404:
            return None
        found = (
            OrganisationSettings.objects.filter(organisation=actor.organisation)
            .values_list("language", flat=True)
            .first()
        )
        return self.LANGUAGES.get(found or "")
