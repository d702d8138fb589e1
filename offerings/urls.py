from django.urls import path

from offerings import views

app_name = "offerings"

urlpatterns = [
    path("", views.instance_list, name="instance-list"),
]
