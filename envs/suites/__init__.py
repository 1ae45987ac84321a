"""Environment suites of other packages as rollgym environments, one room each, each installed by its own extra and
registered by id without being imported (`rollgym envs` lists them; docs/catalogue.md)."""
