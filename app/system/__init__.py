"""The desktop around the app: paths, settings, secrets, endpoints, translators, crash logs."""
