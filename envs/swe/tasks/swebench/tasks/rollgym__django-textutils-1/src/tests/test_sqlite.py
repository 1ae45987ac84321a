# The settings the test suite runs with (./tests/runtests.py --settings=test_sqlite, the default).
#
# The tests need no database of their own, but Django wants one configured; SQLite in memory is
# the cheapest.

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
    },
}

SECRET_KEY = "django_tests_secret_key"

INSTALLED_APPS = [
    "textutils",
]

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
    },
]

USE_TZ = True

DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
