from django.apps import AppConfig


class TextUtilsConfig(AppConfig):
    name = "textutils"
    verbose_name = "Text utilities"
