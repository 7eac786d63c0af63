"""The API's lists are answered a page at a time: `?limit=` (50 unless asked) and `?offset=`.

A limit past `MAX_PAGE` is answered with `MAX_PAGE` rows and the link to the next page, so no
request reads an organisation's whole table (millions of events) into a web process at once.
"""

from __future__ import annotations

from rest_framework.pagination import LimitOffsetPagination

#: The most rows one page of a list holds, whatever `?limit=` asks.
MAX_PAGE = 500


class Pages(LimitOffsetPagination):
    """`LimitOffsetPagination` with its `limit` capped at `MAX_PAGE`."""

    max_limit = MAX_PAGE
