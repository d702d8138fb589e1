from django.apps import AppConfig


class ProvidersConfig(AppConfig):
    name = "providers"
    verbose_name = "Provider scrapers"

    def ready(self) -> None:
        # Every process (web, worker, beat, manage.py) refuses a broken timeout chain or a
        # per-provider setting that names no provider, and beat reads the schedule built here
        # from the registry (Celery sets Django up before its scheduler reads the schedule).
        from gpucatalog.celery import app
        from providers.schedule import beat_schedule, timeout_chain

        timeout_chain().check()
        app.conf.beat_schedule = beat_schedule()
