from __future__ import annotations

from django.urls import path

from . import async_views, views

urlpatterns = [
    path("", views.index, name="index"),
    path("stop", views.stop, name="stop"),
    path("ask", views.ask, name="ask"),
    path("stream", views.stream, name="stream"),
    # For ASGI servers (see chat/async_views.py); under WSGI use the two above.
    path("async/ask", async_views.ask, name="ask-async"),
    path("async/stream", async_views.stream, name="stream-async"),
]
