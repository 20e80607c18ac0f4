from __future__ import annotations

from django.urls import path

from . import views

urlpatterns = [
    path("", views.page, name="approvals"),
    path("pending", views.pending, name="approvals-pending"),
    path("answer", views.answer, name="approvals-answer"),
    path("clicks/<slug:click_id>", views.click, name="approvals-click"),
]
