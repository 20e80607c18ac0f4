from __future__ import annotations

from django.urls import include, path

urlpatterns = [
    path("approvals/", include("approvals.urls")),
    path("", include("chat.urls")),
]
