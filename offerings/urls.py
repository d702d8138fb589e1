from django.urls import path

from offerings import views

app_name = "offerings"

urlpatterns = [
    path("", views.instance_list, name="instance-list"),
    path("instances/<slug:provider>/<slug:slug>/", views.instance_detail, name="instance-detail"),
]
